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
//!
//! The header changes only through write transactions, like any other page, so readers
//! see the page count and roots of their snapshot. The magic and the page size are
//! read straight from the file before anything else, to recognise a BeeDB file.
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
