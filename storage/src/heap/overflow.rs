//! Overflow chains: a long value stored out of line, across as many pages as it needs.
//!
//! | offset | size | field       | meaning                                               |
//! |-------:|-----:|-------------|-------------------------------------------------------|
//! | 0      | 16   | page header | common header ([`crate::page`]), kind `Overflow`      |
//! | 16     | 4    | next_page   | next page of the chain; 0 ends it                     |
//! | 20     | 4    | data_len    | bytes of the value on this page: 1..=page_size − 24   |
//! | 24     | …    | data        | the next `data_len` bytes of the value; rest zero     |
//!
//! The tuple keeps the value's total length and first page (see [`crate::tuple`]).
//! Every page but the last is full, so a chain has exactly ⌈len / capacity⌉ pages.
//! Readers check that and the page kinds, so a corrupt chain (a loop, a short or long
//! chain, a page of another kind) is reported after at most that many reads, never
//! followed forever. A chain belongs to exactly one tuple and is freed with it.
//!
//! Like SQLite's overflow pages (and unlike PostgreSQL's TOAST table, which packs
//! chunks of many values into shared pages), the last page of a chain is not shared, so
//! a value just over a page wastes most of its second page. Simple and good enough
//! until values get compressed.

use crate::access::{PageRead, PageWrite, PageWriteGuard};
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::page::{PageKind, expect_kind, format_page, read_u32, write_u32};

pub const NEXT_PAGE_OFFSET: usize = 16;
pub const DATA_LEN_OFFSET: usize = 20;
pub const DATA_OFFSET: usize = 24;

/// Bytes of a value one overflow page holds.
pub const fn capacity(page_size: usize) -> usize {
    page_size - DATA_OFFSET
}

/// The bytes after the page's data as (offset, length), if `data_len` fits the page:
/// the WAL leaves them out of the page's frame (`crate::wal`).
pub(crate) fn free_gap(page: &[u8]) -> Option<(usize, usize)> {
    let n = read_u32(page, DATA_LEN_OFFSET) as usize;
    (n <= capacity(page.len())).then(|| (DATA_OFFSET + n, page.len() - DATA_OFFSET - n))
}

/// Writes `data` to a new chain and returns its first page (`PageId::NONE` for an
/// empty value, which needs no page).
pub fn write_chain<W: PageWrite + ?Sized>(w: &W, data: &[u8]) -> Result<PageId> {
    let cap = capacity(w.page_size());
    let mut first = PageId::NONE;
    let mut prev: Option<PageWriteGuard> = None;
    for chunk in data.chunks(cap) {
        let mut g = w.allocate_page()?;
        let id = g.id();
        format_page(&mut g, id, PageKind::Overflow);
        write_u32(&mut g, DATA_LEN_OFFSET, chunk.len() as u32);
        g[DATA_OFFSET..DATA_OFFSET + chunk.len()].copy_from_slice(chunk);
        match prev.as_mut() {
            Some(p) => write_u32(p, NEXT_PAGE_OFFSET, id.0),
            None => first = id,
        }
        prev = Some(g);
    }
    Ok(first)
}

/// Follows the chain of a `len`-byte value from `first`, calling `f` with each page's
/// id and data, and checks its structure.
pub fn walk_chain<R: PageRead + ?Sized>(
    r: &R,
    first: PageId,
    len: u32,
    mut f: impl FnMut(PageId, &[u8]),
) -> Result<()> {
    let cap = capacity(r.page_size());
    let mut remaining = len as usize;
    let mut id = first;
    if remaining == 0 && !id.is_none() {
        return Err(Error::corrupt(
            id,
            "an empty value points to an overflow page",
        ));
    }
    while remaining > 0 {
        if id.is_none() {
            return Err(Error::CorruptTuple(format!(
                "overflow chain of a {len}-byte value ends {remaining} bytes early"
            )));
        }
        let g = r.read_page(id)?;
        expect_kind(&g, id, PageKind::Overflow)?;
        let n = read_u32(&g, DATA_LEN_OFFSET) as usize;
        // Each page but the last is full: the chain has exactly ⌈len/cap⌉ pages.
        if n != cap.min(remaining) {
            return Err(Error::corrupt(
                id,
                format!(
                    "overflow page holds {n} bytes; expected {} (capacity {cap}, {remaining} bytes of the value left)",
                    cap.min(remaining)
                ),
            ));
        }
        f(id, &g[DATA_OFFSET..DATA_OFFSET + n]);
        remaining -= n;
        let next = PageId(read_u32(&g, NEXT_PAGE_OFFSET));
        if remaining == 0 && !next.is_none() {
            return Err(Error::corrupt(
                id,
                format!("overflow chain continues to page {next} past the value's {len} bytes"),
            ));
        }
        id = next;
    }
    Ok(())
}

/// Reads a `len`-byte value stored from `first`.
pub fn read_chain<R: PageRead + ?Sized>(r: &R, first: PageId, len: u32) -> Result<Vec<u8>> {
    // Do not trust `len` for the allocation: a corrupt pointer could say 4 GiB.
    let mut out = Vec::with_capacity((len as usize).min(1 << 20));
    walk_chain(r, first, len, |_, data| out.extend_from_slice(data))?;
    Ok(out)
}

/// The pages of a chain, checked.
pub fn chain_pages<R: PageRead + ?Sized>(r: &R, first: PageId, len: u32) -> Result<Vec<PageId>> {
    let mut pages = Vec::new();
    walk_chain(r, first, len, |id, _| pages.push(id))?;
    Ok(pages)
}

/// Frees the chain of a `len`-byte value. The whole chain is checked first, so a
/// corrupt chain frees nothing.
pub fn free_chain<W: PageWrite + ?Sized>(w: &W, first: PageId, len: u32) -> Result<()> {
    for id in chain_pages(w, first, len)? {
        w.free_page(id)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::testing::MemPageStore;

    fn value(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn chains_round_trip_and_free_their_pages() {
        let s = MemPageStore::new(4096);
        let cap = capacity(4096);
        for len in [1, cap - 1, cap, cap + 1, 3 * cap, 5 * cap + 17] {
            let v = value(len);
            let first = write_chain(&s, &v).unwrap();
            assert_eq!(s.allocated_pages(), len.div_ceil(cap));
            assert_eq!(read_chain(&s, first, len as u32).unwrap(), v);
            free_chain(&s, first, len as u32).unwrap();
            assert_eq!(s.allocated_pages(), 0);
        }
        assert_eq!(write_chain(&s, &[]).unwrap(), PageId::NONE);
        assert!(read_chain(&s, PageId::NONE, 0).unwrap().is_empty());
    }

    #[test]
    fn corrupt_chains_are_reported() {
        let s = MemPageStore::new(4096);
        let cap = capacity(4096);
        let v = value(3 * cap);
        let first = write_chain(&s, &v).unwrap();
        let pages = chain_pages(&s, first, v.len() as u32).unwrap();
        // Wrong declared lengths.
        assert!(read_chain(&s, first, v.len() as u32 + 1).is_err());
        assert!(read_chain(&s, first, v.len() as u32 - 1).is_err());
        // A loop: the last page points back to the first.
        {
            let mut g = s.write_page(pages[2]).unwrap();
            write_u32(&mut g, NEXT_PAGE_OFFSET, first.0);
        }
        let err = read_chain(&s, first, v.len() as u32).unwrap_err();
        assert!(
            err.to_string().contains(&format!("page {}", pages[2])),
            "{err}"
        );
        assert!(free_chain(&s, first, v.len() as u32).is_err());
        assert_eq!(s.allocated_pages(), 3, "a corrupt chain frees nothing");
        // A loop with a huge declared length stops at the first short page.
        {
            let mut g = s.write_page(pages[1]).unwrap();
            write_u32(&mut g, DATA_LEN_OFFSET, 10);
        }
        let err = read_chain(&s, first, u32::MAX).unwrap_err();
        assert!(
            err.to_string().contains(&format!("page {}", pages[1])),
            "{err}"
        );
        // A page of another kind.
        {
            let mut g = s.write_page(pages[1]).unwrap();
            format_page(&mut g, pages[1], PageKind::Heap);
        }
        assert!(read_chain(&s, first, v.len() as u32).is_err());
    }
}
