//! The slotted heap page.
//!
//! | offset          | size | field       | meaning                                                          |
//! |----------------:|-----:|-------------|------------------------------------------------------------------|
//! | 0               | 16   | page header | common header ([`crate::page`]), kind [`PageKind::Heap`]         |
//! | 16              | 2    | slot_count  | entries in the slot array (live or unused)                       |
//! | 18              | 2    | free_start  | end of the slot array = 32 + 4 × slot_count                      |
//! | 20              | 2    | free_end    | start of the tuple data (lowest tuple byte); 0 means 65536       |
//! | 22              | 2    | unused      | unused slots below slot_count: lets an insert skip the slot scan  |
//! | 24              | 4    | next_page   | next page of the heap's chain; 0 ends it                         |
//! | 28              | 4    | last_page   | first page of a heap only: the chain's last page (insert target) |
//! | 32              | 4×n  | slot array  | n × (offset u16, length u16); length 0 = unused (offset 0)       |
//! | free_start      | …    | free space  | contiguous, between the slot array and the tuple data           |
//! | free_end        | …    | tuple data  | tuples grow down from the page end, each 8-byte aligned          |
//!
//! Every tuple starts at a multiple of 8 from the page start and owns its length
//! rounded up to 8; the bytes between are padding (zeroed when written). Deleting a
//! tuple leaves a hole in the data area (except at `free_end`, which moves up); an
//! insert or an in-place update that does not fit in the contiguous free space but fits
//! in all the free space compacts the page first (slot numbers do not change, so tuple
//! ids stay valid). Trailing unused slots are trimmed; an unused slot in the middle is
//! reused by the next insert into the page.
//!
//! `free_end` is a u16 like everything else on the page, but a 64 KiB page that holds
//! no tuple has `free_end == 65536`: that one value is stored as 0 (as SQLite does),
//! which no valid page can otherwise hold since the slot array starts at 32.

use crate::error::{Error, Result};
use crate::ids::{PageId, SlotId, TupleId};
use crate::page::{PageKind, expect_kind, format_page, read_u16, read_u32, write_u16, write_u32};
use crate::tuple::TUPLE_HEADER_SIZE;

pub const SLOT_COUNT_OFFSET: usize = 16;
pub const FREE_START_OFFSET: usize = 18;
pub const FREE_END_OFFSET: usize = 20;
pub const UNUSED_SLOTS_OFFSET: usize = 22;
pub const NEXT_PAGE_OFFSET: usize = 24;
pub const LAST_PAGE_OFFSET: usize = 28;
/// Start of the slot array (end of the heap page header).
pub const SLOT_ARRAY_OFFSET: usize = 32;
/// Bytes per slot entry: offset u16, length u16.
pub const SLOT_SIZE: usize = 4;
/// Tuples start at multiples of this from the page start.
pub const TUPLE_ALIGN: usize = crate::tuple::TUPLE_ALIGN;

/// Longest tuple a page of `page_size` bytes holds (alone, with its slot).
pub const fn max_tuple_len(page_size: usize) -> usize {
    (page_size - SLOT_ARRAY_OFFSET - SLOT_SIZE) / TUPLE_ALIGN * TUPLE_ALIGN
}

#[inline]
fn align(len: usize) -> usize {
    len.next_multiple_of(TUPLE_ALIGN)
}

/// Formats `page` as an empty heap page.
pub fn init(page: &mut [u8], id: PageId) {
    format_page(page, id, PageKind::Heap);
    write_u16(page, SLOT_COUNT_OFFSET, 0);
    write_u16(page, FREE_START_OFFSET, SLOT_ARRAY_OFFSET as u16);
    set_free_end(page, page.len());
}

fn set_free_end(page: &mut [u8], free_end: usize) {
    // 65536 (an empty 64 KiB page) wraps to 0, which decodes back to the page size.
    write_u16(page, FREE_END_OFFSET, free_end as u16);
}

pub fn next_page(page: &[u8]) -> PageId {
    PageId(read_u32(page, NEXT_PAGE_OFFSET))
}

pub fn set_next_page(page: &mut [u8], next: PageId) {
    write_u32(page, NEXT_PAGE_OFFSET, next.0);
}

pub fn last_page(page: &[u8]) -> PageId {
    PageId(read_u32(page, LAST_PAGE_OFFSET))
}

pub fn set_last_page(page: &mut [u8], last: PageId) {
    write_u32(page, LAST_PAGE_OFFSET, last.0);
}

#[inline]
fn slot_entry(page: &[u8], i: usize) -> (usize, usize) {
    let at = SLOT_ARRAY_OFFSET + i * SLOT_SIZE;
    (read_u16(page, at) as usize, read_u16(page, at + 2) as usize)
}

#[inline]
fn set_slot_entry(page: &mut [u8], i: usize, off: usize, len: usize) {
    let at = SLOT_ARRAY_OFFSET + i * SLOT_SIZE;
    write_u16(page, at, off as u16);
    write_u16(page, at + 2, len as u16);
}

/// The validated header fields of a heap page.
#[derive(Clone, Copy, Debug)]
struct Header {
    slot_count: usize,
    free_end: usize,
}

impl Header {
    fn free_start(&self) -> usize {
        SLOT_ARRAY_OFFSET + self.slot_count * SLOT_SIZE
    }
}

/// Checks the kind and the header fields (not the slots).
fn header(page: &[u8], id: PageId) -> Result<Header> {
    expect_kind(page, id, PageKind::Heap)?;
    let len = page.len();
    let slot_count = read_u16(page, SLOT_COUNT_OFFSET) as usize;
    let free_start = read_u16(page, FREE_START_OFFSET) as usize;
    let free_end = match read_u16(page, FREE_END_OFFSET) as usize {
        0 => len,
        v => v,
    };
    let h = Header {
        slot_count,
        free_end,
    };
    if free_start != h.free_start() {
        return Err(Error::corrupt(
            id,
            format!(
                "free_start {free_start} but {slot_count} slots end at {}",
                h.free_start()
            ),
        ));
    }
    if free_start > free_end || free_end > len || free_end % TUPLE_ALIGN != 0 {
        return Err(Error::corrupt(
            id,
            format!(
                "free space {free_start}..{free_end} is not within the {len}-byte page or misaligned"
            ),
        ));
    }
    Ok(h)
}

/// The free space between the slot array and the tuple data as (offset, length), when
/// the header describes it consistently (`None` otherwise). The WAL leaves it out of the
/// page's frame (`crate::wal`): what lies there is never read, so a replayed page holds
/// zeros where the page it logged may have held the bytes of a removed tuple.
pub(crate) fn free_gap(page: &[u8]) -> Option<(usize, usize)> {
    let h = header(page, PageId(read_u32(page, 4))).ok()?;
    Some((h.free_start(), h.free_end - h.free_start()))
}

/// Checks a slot entry against the page; returns `(offset, len)`, len 0 if unused.
#[inline]
fn checked_slot(page: &[u8], id: PageId, h: Header, i: usize) -> Result<(usize, usize)> {
    let (off, len) = slot_entry(page, i);
    if len != 0 && (off < h.free_end || off + len > page.len() || off % TUPLE_ALIGN != 0) {
        return Err(bad_slot(page, id, h, i, off, len));
    }
    Ok((off, len))
}

#[cold]
fn bad_slot(page: &[u8], id: PageId, h: Header, i: usize, off: usize, len: usize) -> Error {
    Error::corrupt(
        id,
        format!(
            "slot {i} ({off}, {len}) is not an aligned range of the tuple area {}..{}",
            h.free_end,
            page.len()
        ),
    )
}

/// A read-only view of a heap page whose header has been checked.
#[derive(Clone, Copy)]
pub struct HeapPage<'a> {
    page: &'a [u8],
    id: PageId,
    h: Header,
}

impl<'a> HeapPage<'a> {
    /// Checks the page kind and the heap header.
    pub fn new(page: &'a [u8], id: PageId) -> Result<Self> {
        let h = header(page, id)?;
        Ok(HeapPage { page, id, h })
    }

    pub fn id(&self) -> PageId {
        self.id
    }

    /// Number of slot entries (live and unused).
    pub fn slot_count(&self) -> usize {
        self.h.slot_count
    }

    pub fn next_page(&self) -> PageId {
        next_page(self.page)
    }

    /// Contiguous free bytes between the slot array and the tuple data.
    pub fn contiguous_free(&self) -> usize {
        self.h.free_end - self.h.free_start()
    }

    /// The tuple in `slot`, `None` if the slot is unused or past the slot array.
    pub fn tuple(&self, slot: SlotId) -> Result<Option<&'a [u8]>> {
        let i = slot.0 as usize;
        if i >= self.h.slot_count {
            return Ok(None);
        }
        let (off, len) = checked_slot(self.page, self.id, self.h, i)?;
        Ok((len != 0).then(|| &self.page[off..off + len]))
    }

    /// Calls `f(slot, offset, len)` for every live tuple, in slot order, checking each
    /// slot as it goes: one pass over the slot array, for scans that decode tuples in
    /// place (offsets into the page).
    #[inline]
    pub fn for_each_tuple_range(&self, mut f: impl FnMut(SlotId, usize, usize)) -> Result<()> {
        for i in 0..self.h.slot_count {
            let (off, len) = checked_slot(self.page, self.id, self.h, i)?;
            if len != 0 {
                f(SlotId(i as u16), off, len);
            }
        }
        Ok(())
    }

    /// The live tuples in slot order. Every slot is checked up front, so the iterator
    /// itself cannot fail and does no more than two loads and a slice per slot.
    pub fn tuples(&self) -> Result<Tuples<'a>> {
        for i in 0..self.h.slot_count {
            checked_slot(self.page, self.id, self.h, i)?;
        }
        Ok(Tuples {
            page: self.page,
            next: 0,
            count: self.h.slot_count,
        })
    }
}

/// Iterates the live `(slot, tuple bytes)` of a heap page; see [`HeapPage::tuples`].
pub struct Tuples<'a> {
    page: &'a [u8],
    next: usize,
    count: usize,
}

impl<'a> Iterator for Tuples<'a> {
    type Item = (SlotId, &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        while self.next < self.count {
            let i = self.next;
            self.next += 1;
            let (off, len) = slot_entry(self.page, i);
            if len != 0 {
                return Some((SlotId(i as u16), &self.page[off..off + len]));
            }
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.count - self.next))
    }
}

/// Convenience: the live `(slot, tuple bytes)` of heap page `page` (with id `id`).
pub fn live_tuples(page: &[u8], id: PageId) -> Result<Tuples<'_>> {
    HeapPage::new(page, id)?.tuples()
}

/// Sum of the aligned lengths of the live tuples, except `skip`; checks every slot.
fn live_bytes(page: &[u8], id: PageId, h: Header, skip: Option<usize>) -> Result<usize> {
    let mut total = 0;
    for i in 0..h.slot_count {
        let (_, len) = checked_slot(page, id, h, i)?;
        if Some(i) != skip {
            total += align(len);
        }
    }
    Ok(total)
}

/// Moves every live tuple to the end of the page, in place, and returns the new
/// `free_end`. Slot numbers are unchanged.
fn compact(page: &mut [u8], id: PageId, h: Header) -> Result<usize> {
    let mut live: Vec<(usize, usize, usize)> = Vec::with_capacity(h.slot_count);
    for i in 0..h.slot_count {
        let (off, len) = checked_slot(page, id, h, i)?;
        if len != 0 {
            live.push((off, len, i));
        }
    }
    live.sort_unstable_by_key(|&(off, _, _)| std::cmp::Reverse(off));
    // Highest tuple first: each moves up (or stays), never over one not yet moved.
    let mut top = page.len();
    let mut prev_off = page.len();
    for (off, len, i) in live {
        if off + len > prev_off {
            return Err(Error::corrupt(
                id,
                format!("slot {i} overlaps another tuple"),
            ));
        }
        prev_off = off;
        let new = top - align(len);
        if new != off {
            page.copy_within(off..off + len, new);
            page[new + len..top].fill(0);
            set_slot_entry(page, i, new, len);
        }
        top = new;
    }
    page[h.free_start()..top].fill(0);
    set_free_end(page, top);
    Ok(top)
}

/// Writes `tuple` at `free_end - align(len)` (the caller checked it fits) into slot `i`.
fn place(page: &mut [u8], free_end: usize, i: usize, tuple: &[u8]) -> usize {
    let off = free_end - align(tuple.len());
    page[off..off + tuple.len()].copy_from_slice(tuple);
    page[off + tuple.len()..free_end].fill(0);
    set_slot_entry(page, i, off, tuple.len());
    set_free_end(page, off);
    off
}

fn check_tuple_len(page: &[u8], id: PageId, tuple: &[u8]) -> Result<()> {
    let max = max_tuple_len(page.len());
    if tuple.len() < TUPLE_HEADER_SIZE || tuple.len() > max {
        return Err(Error::InvalidArgument(format!(
            "a {}-byte tuple does not fit heap page {id} (limit {max})",
            tuple.len()
        )));
    }
    Ok(())
}

/// Inserts `tuple` into the page: into the first unused slot or a new one, compacting
/// if needed. `None` if it does not fit.
pub fn insert(page: &mut [u8], id: PageId, tuple: &[u8]) -> Result<Option<SlotId>> {
    check_tuple_len(page, id, tuple)?;
    let h = header(page, id)?;
    let unused = read_u16(page, UNUSED_SLOTS_OFFSET);
    // Appending inserts (the common case) have no unused slot to look for.
    let reuse = if unused == 0 {
        None
    } else {
        (0..h.slot_count).find(|&i| slot_entry(page, i).1 == 0)
    };
    let need = align(tuple.len()) + if reuse.is_some() { 0 } else { SLOT_SIZE };
    let mut free_end = h.free_end;
    if free_end - h.free_start() < need {
        let total_free = page.len() - h.free_start() - live_bytes(page, id, h, None)?;
        if total_free < need {
            return Ok(None);
        }
        free_end = compact(page, id, h)?;
    }
    let i = match reuse {
        Some(i) => {
            write_u16(page, UNUSED_SLOTS_OFFSET, unused - 1);
            i
        }
        None => {
            let i = h.slot_count;
            write_u16(page, SLOT_COUNT_OFFSET, (i + 1) as u16);
            write_u16(page, FREE_START_OFFSET, (h.free_start() + SLOT_SIZE) as u16);
            i
        }
    };
    place(page, free_end, i, tuple);
    Ok(Some(SlotId(i as u16)))
}

/// The (offset, length) of the live tuple in `slot`, or `NoSuchTuple`.
fn live_slot(page: &[u8], id: PageId, h: Header, slot: SlotId) -> Result<(usize, usize)> {
    let i = slot.0 as usize;
    match (i < h.slot_count)
        .then(|| checked_slot(page, id, h, i))
        .transpose()?
    {
        Some((off, len)) if len != 0 => Ok((off, len)),
        _ => Err(Error::NoSuchTuple(TupleId { page: id, slot })),
    }
}

/// Replaces the tuple in `slot` with `tuple` if it fits in this page (compacting if
/// needed). `Ok(false)` leaves the page unchanged.
pub fn replace(page: &mut [u8], id: PageId, slot: SlotId, tuple: &[u8]) -> Result<bool> {
    check_tuple_len(page, id, tuple)?;
    let h = header(page, id)?;
    let i = slot.0 as usize;
    let (off, len) = live_slot(page, id, h, slot)?;
    let new_len = align(tuple.len());
    if new_len <= align(len) {
        // Same place; any shrinkage becomes a hole.
        page[off..off + tuple.len()].copy_from_slice(tuple);
        page[off + tuple.len()..off + new_len].fill(0);
        set_slot_entry(page, i, off, tuple.len());
        return Ok(true);
    }
    let mut free_end = h.free_end;
    if free_end - h.free_start() < new_len {
        let total_free = page.len() - h.free_start() - live_bytes(page, id, h, Some(i))?;
        if total_free < new_len {
            return Ok(false);
        }
        set_slot_entry(page, i, 0, 0);
        free_end = compact(page, id, h)?;
    }
    place(page, free_end, i, tuple);
    Ok(true)
}

/// Removes the tuple in `slot` (its slot becomes unused; trailing unused slots are
/// trimmed).
pub fn remove(page: &mut [u8], id: PageId, slot: SlotId) -> Result<()> {
    let h = header(page, id)?;
    let i = slot.0 as usize;
    let (off, len) = live_slot(page, id, h, slot)?;
    set_slot_entry(page, i, 0, 0);
    let mut count = h.slot_count;
    while count > 0 && slot_entry(page, count - 1).1 == 0 {
        count -= 1;
    }
    let mut free_end = h.free_end;
    if count == 0 {
        free_end = page.len();
    } else if off == free_end {
        free_end += align(len);
    }
    // The removed slot is now unused; the trimmed trailing slots (it among them, if it
    // was last) no longer count.
    let unused = read_u16(page, UNUSED_SLOTS_OFFSET) as usize + 1 - (h.slot_count - count);
    write_u16(page, UNUSED_SLOTS_OFFSET, unused as u16);
    write_u16(page, SLOT_COUNT_OFFSET, count as u16);
    write_u16(
        page,
        FREE_START_OFFSET,
        (SLOT_ARRAY_OFFSET + count * SLOT_SIZE) as u16,
    );
    set_free_end(page, free_end);
    Ok(())
}

/// Checks a heap page's whole structure: header, the unused-slot count, every slot within the
/// tuple area, aligned and at least a tuple header long, unused slots zeroed, and no
/// two tuples overlapping. (The chain is checked by [`super::HeapFile::verify`].)
pub fn verify(page: &[u8], id: PageId) -> Result<()> {
    let h = header(page, id)?;
    let mut live = Vec::with_capacity(h.slot_count);
    for i in 0..h.slot_count {
        let (off, len) = checked_slot(page, id, h, i)?;
        if len == 0 {
            if off != 0 {
                return Err(Error::corrupt(
                    id,
                    format!("unused slot {i} has offset {off}"),
                ));
            }
        } else if len < TUPLE_HEADER_SIZE {
            return Err(Error::corrupt(
                id,
                format!("slot {i} holds a {len}-byte tuple"),
            ));
        } else {
            live.push((off, len, i));
        }
    }
    if h.slot_count > 0 && slot_entry(page, h.slot_count - 1).1 == 0 {
        return Err(Error::corrupt(id, "trailing unused slot was not trimmed"));
    }
    let recorded = read_u16(page, UNUSED_SLOTS_OFFSET) as usize;
    if recorded != h.slot_count - live.len() {
        return Err(Error::corrupt(
            id,
            format!(
                "header records {recorded} unused slots, the slot array has {}",
                h.slot_count - live.len()
            ),
        ));
    }
    live.sort_unstable();
    for w in live.windows(2) {
        let ((off0, len0, i0), (off1, _, i1)) = (w[0], w[1]);
        if off0 + len0 > off1 {
            return Err(Error::corrupt(id, format!("slots {i0} and {i1} overlap")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuple(len: usize, fill: u8) -> Vec<u8> {
        let mut t = vec![fill; len];
        t[..4].copy_from_slice(&[0, 0, 0, 0]);
        t
    }

    #[test]
    fn insert_remove_reuse_and_compact() {
        let mut p = vec![0u8; 4096];
        init(&mut p, PageId(5));
        verify(&p, PageId(5)).unwrap();
        let mut slots = Vec::new();
        let mut n = 0u8;
        while let Some(s) = insert(&mut p, PageId(5), &tuple(100, n)).unwrap() {
            slots.push((s, n));
            n += 1;
            verify(&p, PageId(5)).unwrap();
        }
        // 4096 - 32 = 4064 bytes; each tuple takes 104 + 4.
        assert_eq!(slots.len(), 4064 / 108);
        // Free every other tuple: holes, no contiguous space.
        for &(s, _) in slots.iter().step_by(2) {
            remove(&mut p, PageId(5), s).unwrap();
        }
        verify(&p, PageId(5)).unwrap();
        // A 200-byte tuple needs compaction and reuses slot 0.
        let s = insert(&mut p, PageId(5), &tuple(200, 0xAA))
            .unwrap()
            .unwrap();
        assert_eq!(s, SlotId(0));
        verify(&p, PageId(5)).unwrap();
        let hp = HeapPage::new(&p, PageId(5)).unwrap();
        assert_eq!(hp.tuple(s).unwrap().unwrap(), &tuple(200, 0xAA)[..]);
        for &(s, n) in slots.iter().skip(1).step_by(2) {
            assert_eq!(
                hp.tuple(s).unwrap().unwrap(),
                &tuple(100, n)[..],
                "slot {s:?}"
            );
        }
        let live: Vec<SlotId> = hp.tuples().unwrap().map(|(s, _)| s).collect();
        assert_eq!(live.len(), slots.len() / 2 + 1);
    }

    #[test]
    fn replace_grows_in_place_by_compacting() {
        let mut p = vec![0u8; 4096];
        init(&mut p, PageId(1));
        let a = insert(&mut p, PageId(1), &tuple(1000, 1)).unwrap().unwrap();
        let b = insert(&mut p, PageId(1), &tuple(1000, 2)).unwrap().unwrap();
        let c = insert(&mut p, PageId(1), &tuple(1000, 3)).unwrap().unwrap();
        remove(&mut p, PageId(1), b).unwrap();
        // a grows to 2000: only fits after compaction.
        assert!(replace(&mut p, PageId(1), a, &tuple(2000, 4)).unwrap());
        verify(&p, PageId(1)).unwrap();
        let hp = HeapPage::new(&p, PageId(1)).unwrap();
        assert_eq!(hp.tuple(a).unwrap().unwrap(), &tuple(2000, 4)[..]);
        assert_eq!(hp.tuple(c).unwrap().unwrap(), &tuple(1000, 3)[..]);
        // Shrinks in place; then a too-large replacement leaves the page unchanged.
        assert!(replace(&mut p, PageId(1), c, &tuple(10, 5)).unwrap());
        let before = p.clone();
        assert!(!replace(&mut p, PageId(1), c, &tuple(3000, 6)).unwrap());
        assert_eq!(p, before);
        assert!(matches!(
            replace(&mut p, PageId(1), b, &tuple(10, 0)),
            Err(Error::NoSuchTuple(_))
        ));
    }

    #[test]
    fn full_64k_page_round_trips() {
        let mut p = vec![0u8; 65536];
        init(&mut p, PageId(2));
        assert_eq!(read_u16(&p, FREE_END_OFFSET), 0);
        verify(&p, PageId(2)).unwrap();
        let big = tuple(max_tuple_len(65536), 7);
        let s = insert(&mut p, PageId(2), &big).unwrap().unwrap();
        verify(&p, PageId(2)).unwrap();
        assert_eq!(
            HeapPage::new(&p, PageId(2))
                .unwrap()
                .tuple(s)
                .unwrap()
                .unwrap(),
            &big[..]
        );
        assert!(insert(&mut p, PageId(2), &tuple(8, 0)).unwrap().is_none());
        remove(&mut p, PageId(2), s).unwrap();
        assert_eq!(read_u16(&p, FREE_END_OFFSET), 0);
        verify(&p, PageId(2)).unwrap();
    }
}
