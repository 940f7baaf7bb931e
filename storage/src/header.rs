//! The database header: the body of page 0.
//!
//! | offset | size | field                                                             |
//! |-------:|-----:|-------------------------------------------------------------------|
//! | 0      | 16   | common page header (`page.rs`), kind = DatabaseHeader             |
//! | 16     | 16   | magic `BeeDB database\0\0`                                         |
//! | 32     | 4    | file format version ([`FILE_FORMAT_VERSION`])                      |
//! | 36     | 4    | page size in bytes                                                |
//! | 40     | 4    | page count: pages 0..count exist                                  |
//! | 44     | 4    | first page of the free list (0 = empty)                           |
//! | 48     | 4    | pages on the free list                                            |
//! | 52     | 4    | zero                                                              |
//! | 56     | 8    | database id: random, shared with the WAL header                   |
//! | 64     | 64   | 8 application root slots (u64 each), opaque to the storage layer |
//! | 128    | 2    | length of the WAL path below (0 = none recorded)                  |
//! | 130    | …    | the WAL's path (bytes of the canonical path), in the file's copy  |
//!
//! The header changes only through write transactions, like any other page, so readers
//! see the page count and roots of their snapshot. The magic and the page size are
//! read straight from the file before anything else, to recognise a BeeDB file.
//!
//! The WAL path is the exception: it is stamped into the database file's copy of page 0
//! whenever that copy is written (creation, checkpoints, an open that starts a WAL under
//! a new name), never through the WAL. It lets every name of the file (a hard link, a
//! renamed file) find the WAL that holds its newest commits; see `Store::open_with`.
//!
//! Free pages form a chain: each free page's body starts with the next free page id.

use crate::ids::PageId;
use crate::page::{PAGE_HEADER_SIZE, read_u32, read_u64, write_u32, write_u64};

pub const MAGIC: &[u8; 16] = b"BeeDB database\0\0";
pub const FILE_FORMAT_VERSION: u32 = 1;
/// Bytes of page 0 that identify the file; enough to read before knowing the page size.
pub const IDENTIFY_BYTES: usize = 64;

const MAGIC_OFFSET: usize = 16;
const FORMAT_OFFSET: usize = 32;
const PAGE_SIZE_OFFSET: usize = 36;
const PAGE_COUNT_OFFSET: usize = 40;
const FREE_HEAD_OFFSET: usize = 44;
const FREE_COUNT_OFFSET: usize = 48;
const DATABASE_ID_OFFSET: usize = 56;
const ROOTS_OFFSET: usize = 64;
const WAL_PATH_LEN_OFFSET: usize = 128;
const WAL_PATH_OFFSET: usize = 130;
/// Number of application root slots.
pub const ROOT_SLOTS: usize = 8;

/// Offset in a free page's body of the next free page id.
pub const FREE_NEXT_OFFSET: usize = PAGE_HEADER_SIZE;

pub fn has_magic(page: &[u8]) -> bool {
    page.len() >= MAGIC_OFFSET + 16 && &page[MAGIC_OFFSET..MAGIC_OFFSET + 16] == MAGIC
}

pub fn write_magic(page: &mut [u8]) {
    page[MAGIC_OFFSET..MAGIC_OFFSET + 16].copy_from_slice(MAGIC);
}

pub fn format_version(page: &[u8]) -> u32 {
    read_u32(page, FORMAT_OFFSET)
}
pub fn set_format_version(page: &mut [u8], v: u32) {
    write_u32(page, FORMAT_OFFSET, v)
}
pub fn page_size(page: &[u8]) -> u32 {
    read_u32(page, PAGE_SIZE_OFFSET)
}
pub fn set_page_size(page: &mut [u8], v: u32) {
    write_u32(page, PAGE_SIZE_OFFSET, v)
}
pub fn page_count(page: &[u8]) -> u32 {
    read_u32(page, PAGE_COUNT_OFFSET)
}
pub fn set_page_count(page: &mut [u8], v: u32) {
    write_u32(page, PAGE_COUNT_OFFSET, v)
}
pub fn free_head(page: &[u8]) -> PageId {
    PageId(read_u32(page, FREE_HEAD_OFFSET))
}
pub fn set_free_head(page: &mut [u8], v: PageId) {
    write_u32(page, FREE_HEAD_OFFSET, v.0)
}
pub fn free_count(page: &[u8]) -> u32 {
    read_u32(page, FREE_COUNT_OFFSET)
}
pub fn set_free_count(page: &mut [u8], v: u32) {
    write_u32(page, FREE_COUNT_OFFSET, v)
}
pub fn database_id(page: &[u8]) -> u64 {
    read_u64(page, DATABASE_ID_OFFSET)
}
pub fn set_database_id(page: &mut [u8], v: u64) {
    write_u64(page, DATABASE_ID_OFFSET, v)
}
pub fn root(page: &[u8], slot: usize) -> u64 {
    read_u64(page, ROOTS_OFFSET + 8 * slot)
}
pub fn set_root(page: &mut [u8], slot: usize, v: u64) {
    write_u64(page, ROOTS_OFFSET + 8 * slot, v)
}

/// The unused rest of page 0 after the header fields and the WAL path, as (offset,
/// length), if the recorded path fits: the WAL leaves it out of the page's frame.
pub(crate) fn free_gap(page: &[u8]) -> Option<(usize, usize)> {
    let len = u16::from_le_bytes([page[WAL_PATH_LEN_OFFSET], page[WAL_PATH_LEN_OFFSET + 1]]);
    let end = WAL_PATH_OFFSET + len as usize;
    (end <= page.len()).then(|| (end, page.len() - end))
}

/// The unused rest of a free page after its next-page link, as (offset, length).
pub(crate) fn free_page_gap(page: &[u8]) -> (usize, usize) {
    (FREE_NEXT_OFFSET + 4, page.len() - FREE_NEXT_OFFSET - 4)
}

/// The WAL path stamped into the database file's copy of page 0, if any.
pub fn wal_path(page: &[u8]) -> Option<&[u8]> {
    let len = u16::from_le_bytes([page[WAL_PATH_LEN_OFFSET], page[WAL_PATH_LEN_OFFSET + 1]]);
    let end = WAL_PATH_OFFSET + len as usize;
    (len > 0 && end <= page.len()).then(|| &page[WAL_PATH_OFFSET..end])
}

/// Stamps `path` as the WAL's path; a path that does not fit the page records none (the
/// WAL is then found by its name beside the file, as before). Returns whether it fit.
/// The caller reseals the page.
pub fn set_wal_path(page: &mut [u8], path: &[u8]) -> bool {
    let fits = WAL_PATH_OFFSET + path.len() <= page.len() && path.len() <= u16::MAX as usize;
    let len = if fits { path.len() } else { 0 };
    let old = u16::from_le_bytes([page[WAL_PATH_LEN_OFFSET], page[WAL_PATH_LEN_OFFSET + 1]]) as usize;
    let clear_to = (WAL_PATH_OFFSET + old.max(len)).min(page.len());
    page[WAL_PATH_OFFSET..clear_to].fill(0);
    page[WAL_PATH_LEN_OFFSET..WAL_PATH_LEN_OFFSET + 2].copy_from_slice(&(len as u16).to_le_bytes());
    page[WAL_PATH_OFFSET..WAL_PATH_OFFSET + len].copy_from_slice(&path[..len]);
    fits
}
