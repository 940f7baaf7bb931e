//! Heap files: a relation's tuples, unordered, in a chain of slotted pages.
//!
//! A heap is named by its first page ([`HeapFile::first_page`]); that page also
//! records the chain's last page, where inserts go. Pages are laid out as described in
//! [`page`]; long values live in [`overflow`] chains.
//!
//! **Tuple ids** (page, slot) are stable: a tuple keeps its id for its whole life,
//! through in-place updates and page compactions, with one exception: an update whose
//! new version does not fit in the tuple's page moves it, and [`HeapFile::update`]
//! returns the new id (the old one then names nothing, and its slot may be reused by a
//! later insert into that page). Indexes must be updated when the returned id differs.
//!
//! **Free space** (a simplification until there is a free-space map): inserts go to
//! the last page of the chain, and a new page is appended when the tuple does not fit
//! there even after compaction. Space freed in earlier pages is reused only by in-place
//! updates of the tuples in those pages; pages are never unlinked until the heap is
//! dropped.
//!
//! **Long values** move out of line transparently: when an encoded tuple would exceed
//! [`external_threshold`] (page size / 4, so at least four tuples share a page), the
//! largest inline variable attributes are written to overflow chains and replaced by
//! external pointers, largest first, until the tuple fits under the threshold. Values
//! shorter than [`MIN_EXTERNAL_LEN`] stay inline unless the tuple would otherwise not
//! fit in a page at all. A tuple that still does not fit in a page (too many fixed
//! attributes) is refused with [`Error::TooLarge`]. The tuple owns its chains: delete,
//! a replacing update and [`HeapFile::drop_heap`] free them. Finding them needs the
//! relation's [`TupleLayout`], which is why those operations take it.
//!
//! **Scans** are page-at-a-time, the shape scan bees will use: [`HeapFile::pages`]
//! yields pinned, share-latched pages, and [`HeapPage::tuples`] iterates one page's
//! live `(slot, tuple bytes)` without allocating.

pub mod overflow;
pub mod page;

use std::collections::HashSet;

use crate::access::{PageRead, PageReadGuard, PageWrite};
use crate::error::{Error, Result};
use crate::ids::{PageId, TupleId};
use crate::tuple::{AttrValue, EXTERNAL_POINTER_SIZE, TupleLayout, variable_encoded_size};

pub use page::{HeapPage, Tuples};

/// Encoded tuples longer than this move their largest values out of line: a quarter
/// page, so a page holds at least four tuples (2 KiB for 8 KiB pages, like
/// PostgreSQL's `TOAST_TUPLE_THRESHOLD`).
pub const fn external_threshold(page_size: usize) -> usize {
    page_size / 4
}

/// Values shorter than this are moved out of line only if the tuple would not fit in a
/// page otherwise: an overflow page for a few dozen bytes wastes more than it saves.
pub const MIN_EXTERNAL_LEN: usize = 64;

/// A handle on a heap file: just the id of its first page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HeapFile {
    pub first_page: PageId,
}

/// Reports a malformed tuple found on a page as a corruption of that page.
fn on_page(e: Error, page: PageId) -> Error {
    match e {
        Error::CorruptTuple(detail) => Error::corrupt(page, format!("tuple: {detail}")),
        e => e,
    }
}

impl HeapFile {
    /// The heap whose first page is `first_page` (as recorded in a catalog).
    pub fn open(first_page: PageId) -> HeapFile {
        HeapFile { first_page }
    }

    /// Creates an empty heap of one page.
    pub fn create<W: PageWrite + ?Sized>(w: &W) -> Result<HeapFile> {
        let mut g = w.allocate_page()?;
        let id = g.id();
        page::init(&mut g, id);
        page::set_last_page(&mut g, id);
        Ok(HeapFile { first_page: id })
    }

    /// Inserts a row (encoded with `layout`, long values moved out of line) and
    /// returns its id. An [`AttrValue::External`] in `row` hands that chain over to
    /// the new tuple: it must belong to no other tuple.
    pub fn insert<W: PageWrite + ?Sized>(
        &self,
        w: &W,
        row: &[AttrValue<'_>],
        layout: &TupleLayout,
    ) -> Result<TupleId> {
        let tuple = prepare(w, row, layout)?;
        self.insert_tuple(w, &tuple)
    }

    /// Inserts a tuple already encoded in the layout's format with every value
    /// inline (as a form bee makes it), no longer than
    /// [`external_threshold`]`(page_size)` — the length up to which [`Self::insert`]
    /// stores a row as `layout.encode` gives it, so both give the same tuple.
    pub fn insert_encoded<W: PageWrite + ?Sized>(&self, w: &W, tuple: &[u8]) -> Result<TupleId> {
        check_encoded(w, tuple)?;
        self.insert_tuple(w, tuple)
    }

    /// [`Self::update`] with a tuple encoded as for [`Self::insert_encoded`]; the old
    /// tuple's overflow chains are freed.
    pub fn update_encoded<W: PageWrite + ?Sized>(
        &self,
        w: &W,
        tid: TupleId,
        tuple: &[u8],
        layout: &TupleLayout,
    ) -> Result<TupleId> {
        check_encoded(w, tuple)?;
        self.replace_tuple(w, tid, tuple, layout, &[])
    }

    /// Appends already-encoded tuple bytes (at most [`page::max_tuple_len`]).
    fn insert_tuple<W: PageWrite + ?Sized>(&self, w: &W, tuple: &[u8]) -> Result<TupleId> {
        let first = self.first_page;
        let last = {
            let g = w.read_page(first)?;
            HeapPage::new(&g, first)?;
            page::last_page(&g)
        };
        if last.is_none() {
            return Err(Error::corrupt(
                first,
                "heap's first page records no last page",
            ));
        }
        let mut g = w.write_page(last)?;
        let hp = HeapPage::new(&g, last)?;
        if !hp.next_page().is_none() {
            return Err(Error::corrupt(
                first,
                format!("last-page pointer names page {last}, which has a successor"),
            ));
        }
        if let Some(slot) = page::insert(&mut g, last, tuple)? {
            return Ok(TupleId { page: last, slot });
        }
        let mut ng = w.allocate_page()?;
        let new = ng.id();
        page::init(&mut ng, new);
        let slot = page::insert(&mut ng, new, tuple)?.ok_or_else(|| Error::TooLarge {
            what: "tuple",
            size: tuple.len(),
            limit: page::max_tuple_len(w.page_size()),
        })?;
        drop(ng);
        page::set_next_page(&mut g, new);
        if last == first {
            page::set_last_page(&mut g, new);
        } else {
            drop(g);
            page::set_last_page(&mut w.write_page(first)?, new);
        }
        Ok(TupleId { page: new, slot })
    }

    /// The bytes of the tuple `tid`, or `None` if its slot is unused. `tid` must name
    /// a page of this heap (as ids from this heap's inserts do).
    pub fn get<R: PageRead + ?Sized>(&self, r: &R, tid: TupleId) -> Result<Option<Vec<u8>>> {
        let g = r.read_page(tid.page)?;
        Ok(HeapPage::new(&g, tid.page)?
            .tuple(tid.slot)?
            .map(<[u8]>::to_vec))
    }

    /// Like [`Self::get`], into a reused buffer; returns whether the tuple exists.
    pub fn get_into<R: PageRead + ?Sized>(
        &self,
        r: &R,
        tid: TupleId,
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        let g = r.read_page(tid.page)?;
        out.clear();
        match HeapPage::new(&g, tid.page)?.tuple(tid.slot)? {
            Some(t) => {
                out.extend_from_slice(t);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Reads a value stored out of line ([`crate::tuple::Attr::External`]).
    pub fn fetch_external<R: PageRead + ?Sized>(
        r: &R,
        len: u32,
        first_page: PageId,
    ) -> Result<Vec<u8>> {
        overflow::read_chain(r, first_page, len)
    }

    /// Replaces tuple `tid` with `row`. In place (same id) when the new version fits
    /// in the tuple's page, compacting it if needed; otherwise the tuple moves and the
    /// new id is returned. The old version's overflow chains are freed, except those
    /// `row` passes on as [`AttrValue::External`] (an unchanged long value).
    pub fn update<W: PageWrite + ?Sized>(
        &self,
        w: &W,
        tid: TupleId,
        row: &[AttrValue<'_>],
        layout: &TupleLayout,
    ) -> Result<TupleId> {
        let tuple = prepare(w, row, layout)?;
        self.replace_tuple(w, tid, &tuple, layout, row)
    }

    /// Replaces tuple `tid` by `tuple`; frees the old tuple's overflow chains except
    /// those `row` hands over.
    fn replace_tuple<W: PageWrite + ?Sized>(
        &self,
        w: &W,
        tid: TupleId,
        tuple: &[u8],
        layout: &TupleLayout,
        row: &[AttrValue<'_>],
    ) -> Result<TupleId> {
        let old_refs = {
            let g = w.read_page(tid.page)?;
            let old = HeapPage::new(&g, tid.page)?
                .tuple(tid.slot)?
                .ok_or(Error::NoSuchTuple(tid))?;
            layout
                .external_refs(old)
                .map_err(|e| on_page(e, tid.page))?
        };
        let new_tid = {
            let mut g = w.write_page(tid.page)?;
            if page::replace(&mut g, tid.page, tid.slot, tuple)? {
                tid
            } else {
                page::remove(&mut g, tid.page, tid.slot)?;
                drop(g);
                self.insert_tuple(w, tuple)?
            }
        };
        for (len, first) in old_refs {
            let kept = row.iter().any(
                |v| matches!(v, AttrValue::External { first_page, .. } if *first_page == first),
            );
            if !kept {
                overflow::free_chain(w, first, len)?;
            }
        }
        Ok(new_tid)
    }

    /// Deletes tuple `tid` and frees its overflow chains.
    pub fn delete<W: PageWrite + ?Sized>(
        &self,
        w: &W,
        tid: TupleId,
        layout: &TupleLayout,
    ) -> Result<()> {
        let refs = {
            let mut g = w.write_page(tid.page)?;
            let refs = {
                let t = HeapPage::new(&g, tid.page)?
                    .tuple(tid.slot)?
                    .ok_or(Error::NoSuchTuple(tid))?;
                layout.external_refs(t).map_err(|e| on_page(e, tid.page))?
            };
            page::remove(&mut g, tid.page, tid.slot)?;
            refs
        };
        for (len, first) in refs {
            overflow::free_chain(w, first, len)?;
        }
        Ok(())
    }

    /// Frees every page of the heap and every overflow chain of its tuples.
    pub fn drop_heap<W: PageWrite + ?Sized>(self, w: &W, layout: &TupleLayout) -> Result<()> {
        let mut seen = HashSet::new();
        let mut id = self.first_page;
        while !id.is_none() {
            if !seen.insert(id) {
                return Err(Error::corrupt(
                    id,
                    "heap page chain loops back to this page",
                ));
            }
            let (refs, next) = {
                let g = w.read_page(id)?;
                let hp = HeapPage::new(&g, id)?;
                let mut refs = Vec::new();
                for (_, t) in hp.tuples()? {
                    refs.extend(layout.external_refs(t).map_err(|e| on_page(e, id))?);
                }
                (refs, hp.next_page())
            };
            for (len, first) in refs {
                overflow::free_chain(w, first, len)?;
            }
            w.free_page(id)?;
            id = next;
        }
        Ok(())
    }

    /// The heap's pages in chain order, pinned and share-latched one at a time. Use
    /// [`HeapPage::new`] and [`HeapPage::tuples`] on each. A chain that loops is
    /// reported as a corrupt page, and the iteration ends after any error.
    pub fn pages<'r, R: PageRead + ?Sized>(&self, r: &'r R) -> HeapPages<'r, R> {
        HeapPages {
            r,
            next: self.first_page,
            loop_check: LoopCheck::default(),
            prefetch: true,
        }
    }

    /// Calls `f` with the id and bytes of every live tuple, page by page.
    pub fn for_each<R: PageRead + ?Sized>(
        &self,
        r: &R,
        mut f: impl FnMut(TupleId, &[u8]) -> Result<()>,
    ) -> Result<()> {
        for g in self.pages(r) {
            let g = g?;
            let page = g.id();
            for (slot, t) in HeapPage::new(&g, page)?.tuples()? {
                f(TupleId { page, slot }, t)?;
            }
        }
        Ok(())
    }

    /// Checks the structure of every page ([`page::verify`]) and of the chain: no
    /// loop, every page a heap page, only the first page records a last page, and it
    /// names the chain's actual last page. Reports [`Error::CorruptPage`].
    pub fn verify<R: PageRead + ?Sized>(&self, r: &R) -> Result<()> {
        let first = self.first_page;
        let mut seen = HashSet::new();
        let mut id = first;
        let mut prev = PageId::NONE;
        let mut recorded_last = PageId::NONE;
        while !id.is_none() {
            if !seen.insert(id) {
                return Err(Error::corrupt(
                    prev,
                    format!("next-page pointer loops back to page {id}"),
                ));
            }
            let g = r.read_page(id)?;
            page::verify(&g, id)?;
            let last = page::last_page(&g);
            if id == first {
                recorded_last = last;
            } else if !last.is_none() {
                return Err(Error::corrupt(
                    id,
                    "a page other than the heap's first records a last page",
                ));
            }
            prev = id;
            id = page::next_page(&g);
        }
        if recorded_last != prev {
            return Err(Error::corrupt(
                first,
                format!("last-page pointer says {recorded_last} but the chain ends at page {prev}"),
            ));
        }
        Ok(())
    }

    /// [`Self::verify`], and also that every tuple decodes under `layout`
    /// ([`TupleLayout::validate`]) and every overflow chain is well formed and belongs
    /// to one tuple only. Returns the number of overflow pages.
    pub fn verify_with_layout<R: PageRead + ?Sized>(
        &self,
        r: &R,
        layout: &TupleLayout,
    ) -> Result<usize> {
        self.verify(r)?;
        let mut chain_pages = HashSet::new();
        self.for_each(r, |tid, t| {
            layout.validate(t).map_err(|e| on_page(e, tid.page))?;
            for (len, first) in layout.external_refs(t).map_err(|e| on_page(e, tid.page))? {
                for p in overflow::chain_pages(r, first, len).map_err(|e| on_page(e, tid.page))? {
                    if !chain_pages.insert(p) {
                        return Err(Error::corrupt(
                            p,
                            format!("overflow page is shared; second owner {tid}"),
                        ));
                    }
                }
            }
            Ok(())
        })?;
        Ok(chain_pages.len())
    }
}

/// Iterator over a heap's pages; see [`HeapFile::pages`].
pub struct HeapPages<'r, R: PageRead + ?Sized> {
    r: &'r R,
    next: PageId,
    loop_check: LoopCheck,
    /// Whether each page read asks for the next one to be loaded meanwhile
    /// ([`HeapPages::without_prefetch`]).
    prefetch: bool,
}

impl<'r, R: PageRead + ?Sized> HeapPages<'r, R> {
    /// The same walk without the prefetch of the next page: for a caller that reads
    /// several pages in a row before working on them (the page dispenser of a
    /// parallel scan, which hands runs of pages to threads), where the next page is
    /// read at once and the prefetch only costs its lookup. Such a caller prefetches
    /// the next page it holds itself ([`prefetch_held`]).
    pub fn without_prefetch(mut self) -> Self {
        self.prefetch = false;
        self
    }
}

/// Asks the CPU to load the start of `page` (a page held, as a scan's next one),
/// the header and slot directory a scan reads first, as [`HeapPages`] does for the
/// page after the one it returns.
#[inline]
pub fn prefetch_held(page: &[u8]) {
    crate::prefetch::prefetch_lines(page.as_ptr(), page.len().min(512));
}

/// Detects a page chain that loops (only a bug or an undetected corruption can make
/// one) in constant space and time per page, by Brent's method: the walk remembers
/// the page at each power-of-two step and reports the first return to it. A loop is
/// found within about twice its length plus the run-in, so a few pages may be read
/// twice before the error; a scan is on the hot path, where a set of every page
/// visited cost a hash insert per page. (Walks that free pages keep the exact set.)
#[derive(Default)]
struct LoopCheck {
    saved: Option<PageId>,
    steps: u64,
    power: u64,
}

impl LoopCheck {
    /// Whether the walk has come back to a page it saw.
    #[inline]
    fn revisits(&mut self, id: PageId) -> bool {
        if self.saved == Some(id) {
            return true;
        }
        if self.steps == self.power {
            self.saved = Some(id);
            self.power = (self.power * 2).max(1);
            self.steps = 0;
        }
        self.steps += 1;
        false
    }
}

impl<R: PageRead + ?Sized> Iterator for HeapPages<'_, R> {
    type Item = Result<PageReadGuard>;

    fn next(&mut self) -> Option<Self::Item> {
        let id = self.next;
        if id.is_none() {
            return None;
        }
        // A page that cannot be read now (a full pool: `Error::PoolExhausted`) is
        // where the walk resumes if it is asked again.
        let g = match self.r.read_page(id) {
            Ok(g) => g,
            Err(e) => return Some(Err(e)),
        };
        self.next = PageId::NONE;
        if self.loop_check.revisits(id) {
            return Some(Err(Error::corrupt(
                id,
                "heap page chain loops back to this page",
            )));
        }
        match HeapPage::new(&g, id) {
            Ok(hp) => self.next = hp.next_page(),
            Err(e) => return Some(Err(e)),
        }
        // The caller works on this page for a while: have the next one loaded meanwhile.
        if self.prefetch && !self.next.is_none() {
            self.r.prefetch_page(self.next);
        }
        Some(Ok(g))
    }
}

/// Encodes `row`, first moving long values to overflow chains if the tuple would
/// exceed the threshold. Nothing is written if the row is refused.
/// Checks a pre-encoded tuple's length (see [`HeapFile::insert_encoded`]).
fn check_encoded<W: PageWrite + ?Sized>(w: &W, tuple: &[u8]) -> Result<()> {
    let limit = external_threshold(w.page_size());
    if tuple.len() > limit {
        return Err(Error::InvalidArgument(format!(
            "encoded tuple of {} bytes exceeds the inline limit of {limit}",
            tuple.len()
        )));
    }
    Ok(())
}

fn prepare<W: PageWrite + ?Sized>(
    w: &W,
    row: &[AttrValue<'_>],
    layout: &TupleLayout,
) -> Result<Vec<u8>> {
    let page_size = w.page_size();
    let threshold = external_threshold(page_size);
    let max = page::max_tuple_len(page_size);
    let mut len = layout.encoded_len(row)?;
    // Each chain must have one owner.
    let externals: Vec<PageId> = row
        .iter()
        .filter_map(|v| match v {
            AttrValue::External { first_page, .. } if !first_page.is_none() => Some(*first_page),
            _ => None,
        })
        .collect();
    for (i, p) in externals.iter().enumerate() {
        if externals[..i].contains(p) {
            return Err(Error::InvalidArgument(format!(
                "two attributes share the overflow chain at page {p}"
            )));
        }
    }
    if len <= threshold {
        return layout.encode(row);
    }
    // Largest inline values first (ties in declaration order); only those whose
    // pointer is shorter than the value.
    let mut candidates: Vec<(usize, usize)> = row
        .iter()
        .enumerate()
        .filter_map(|(i, v)| match v {
            AttrValue::Variable(b) if variable_encoded_size(b.len()) > EXTERNAL_POINTER_SIZE => {
                Some((i, b.len()))
            }
            _ => None,
        })
        .collect();
    candidates.sort_by_key(|&(_, len)| std::cmp::Reverse(len)); // stable
    let mut chosen = Vec::new();
    for (i, vlen) in candidates {
        if len <= threshold || (vlen < MIN_EXTERNAL_LEN && len <= max) {
            break;
        }
        len -= variable_encoded_size(vlen) - EXTERNAL_POINTER_SIZE;
        chosen.push(i);
    }
    if len > max {
        return Err(Error::TooLarge {
            what: "tuple",
            size: len,
            limit: max,
        });
    }
    let mut values = row.to_vec();
    for i in chosen {
        if let AttrValue::Variable(b) = row[i] {
            let first_page = overflow::write_chain(w, b)?;
            values[i] = AttrValue::External {
                len: b.len() as u32,
                first_page,
            };
        }
    }
    layout.encode(&values)
}

#[cfg(test)]
mod tests;
