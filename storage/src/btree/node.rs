//! B+tree node pages: on-page layout, read-only views and in-place edits.
//!
//! # Node page layout
//!
//! Leaves and internal nodes share one slotted layout. After the common 16-byte page
//! header (see [`crate::page`]) comes the node header, then the slot array growing up,
//! then free space, then the cell content area growing down from the end of the page:
//!
//! ```text
//! | page header | node header | slot 0 | slot 1 | ... ->   free   <- cells ... |
//! 0             16            36                          content_start    page_size
//! ```
//!
//! | offset | size | field          | meaning                                                     |
//! |-------:|-----:|----------------|-------------------------------------------------------------|
//! | 0      | 16   | page header    | kind `BTreeLeaf` or `BTreeInternal`; flags below            |
//! | 16     | 2    | cell_count     | number of cells (= slots)                                   |
//! | 18     | 2    | garbage        | bytes of dead cells inside the content area                 |
//! | 20     | 4    | content_start  | offset of the lowest cell byte; `page_size` when empty      |
//! | 24     | 4    | left           | leaf: previous leaf; internal: leftmost child (child 0)     |
//! | 28     | 4    | right          | leaf: next leaf; internal: zero                             |
//! | 32     | 1    | level          | 0 for leaves, 1 + child level for internal nodes            |
//! | 33     | 3    | reserved       | zero                                                        |
//! | 36     | 2·n  | slot array     | u16 cell offsets, in key order                              |
//!
//! Page-header flags (kind-specific bits at page offset 10) are used by the root only:
//! [`FLAG_ROOT`] marks the tree's root page and [`FLAG_UNIQUE`] says the tree is unique.
//! The root's `level` is the tree height minus one. Sibling and child links use
//! [`PageId::NONE`] (0) for "no page". Free space is `content_start - (36 + 2·n) +
//! garbage`; when the contiguous gap is too small for a new cell the node is compacted.
//!
//! ## Leaf cell
//!
//! | offset  | size    | field   |
//! |--------:|--------:|---------|
//! | 0       | 2       | key_len |
//! | 2       | 1       | val_len (≤ [`MAX_VALUE_LEN`]) |
//! | 3       | key_len | key     |
//! | 3+klen  | val_len | value   |
//!
//! ## Internal cell
//!
//! Cell `i` holds separator `S(i+1)` and child `C(i+1)`; child `C0` is in the header.
//!
//! | offset  | size    | field   |
//! |--------:|--------:|---------|
//! | 0       | 4       | child page id |
//! | 4       | 2       | key_len |
//! | 6       | 1       | val_len |
//! | 7       | key_len | separator key |
//! | 7+klen  | val_len | separator value suffix (always empty in unique trees) |
//!
//! # Order and separators
//!
//! Keys compare with `memcmp` (`<[u8]>::cmp`). A unique tree orders entries by key; a
//! non-unique tree orders them by `(key, value)` (so duplicates of a key are distinct,
//! ordered entries). A separator is a point `(key, value)` in that order (the value
//! part is empty in unique trees). With separators `S1 < … < Sn` an internal node's
//! child `Ci` holds exactly the entries `e` with `Si <= e < S(i+1)` (with the node's
//! own bounds standing in for `S0` and `S(n+1)`). Separators are suffix-truncated: on a
//! split between entries `L < R` the separator is the shortest prefix of `R`'s key
//! (or, when the keys are equal, `R`'s key with the shortest prefix of `R`'s value)
//! that is still greater than `L`.
//!
//! # Invariants (checked by [`super::tree::BTree::verify`])
//!
//! 1. **Page kinds and flags.** The root page carries `FLAG_ROOT` (and `FLAG_UNIQUE`
//!    for unique trees); no other node carries any flag. A node of level 0 is a
//!    `BTreeLeaf` page, a node of level > 0 a `BTreeInternal` page.
//! 2. **Node format.** `36 + 2·n <= content_start <= page_size`; every cell lies inside
//!    the content area; cells do not overlap; the cells' sizes plus `garbage` add up to
//!    exactly `page_size - content_start`. Internal nodes have no `right` link.
//! 3. **Sizes.** Keys are at most [`max_key_len`] bytes, values at most
//!    [`MAX_VALUE_LEN`]; separators of unique trees have an empty value part.
//! 4. **Sorted nodes.** Entries of a leaf and separators of an internal node are
//!    strictly increasing in the tree's order (so a unique tree holds no equal keys
//!    within a node).
//! 5. **Separator bounds.** Every entry and separator in the subtree of child `Ci` lies
//!    in `[Si, S(i+1))`, intersected with the bounds inherited from the ancestors.
//! 6. **Balance.** Each child's level is its parent's level minus one, so every leaf is
//!    at the same depth, `root level + 1` (the height).
//! 7. **Leaf chain.** Leaves are doubly linked in key order: the leftmost leaf's `prev`
//!    and the rightmost leaf's `next` are `NONE`, and `A.next == B` exactly when
//!    `B.prev == A` for leaves adjacent in key order.
//! 8. **Global order.** The last entry of each leaf is less than the first entry of the
//!    next leaf, so a unique tree holds every key at most once.
//! 9. **No empty non-root leaf.** Only the root may be an empty leaf (an empty tree);
//!    internal nodes always have at least their leftmost child.
//! 10. **Tree shape.** Every page is reached once from the root (no shared pages or
//!     cycles), and the height is at most [`MAX_HEIGHT`].
//!
//! `verify` also counts the entries and pages it saw and reports them.

use std::cmp::Ordering;

use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::page::{self, PAGE_HEADER_SIZE, PageKind, read_u16, read_u32, write_u16, write_u32};

/// Root page flag: this page is the root of a B+tree.
pub const FLAG_ROOT: u16 = 1;
/// Root page flag: the tree rejects a second entry with an equal key.
pub const FLAG_UNIQUE: u16 = 2;

const COUNT_OFF: usize = PAGE_HEADER_SIZE;
const GARBAGE_OFF: usize = PAGE_HEADER_SIZE + 2;
const CONTENT_OFF: usize = PAGE_HEADER_SIZE + 4;
const LEFT_OFF: usize = PAGE_HEADER_SIZE + 8;
const RIGHT_OFF: usize = PAGE_HEADER_SIZE + 12;
const LEVEL_OFF: usize = PAGE_HEADER_SIZE + 16;
/// Offset of the slot array (end of the node header).
pub const SLOT_ARRAY_OFF: usize = PAGE_HEADER_SIZE + 20;
/// Bytes per slot.
pub const SLOT_SIZE: usize = 2;
/// Bytes of a leaf cell before the key.
pub const LEAF_CELL_HEADER: usize = 3;
/// Bytes of an internal cell before the key.
pub const INTERNAL_CELL_HEADER: usize = 7;
/// Largest value a B+tree entry may carry (a tuple id is 6 bytes).
pub const MAX_VALUE_LEN: usize = 64;
/// Largest tree height this code builds or accepts.
pub const MAX_HEIGHT: usize = 32;

/// Largest key a tree in a database with this page size accepts: an eighth of a
/// page, so that every node holds at least six maximal cells.
pub const fn max_key_len(page_size: usize) -> usize {
    page_size / 8
}

/// Bytes available for slots and cells in a node.
pub const fn usable_space(page_size: usize) -> usize {
    page_size - SLOT_ARRAY_OFF
}

pub const fn leaf_cell_size(key_len: usize, val_len: usize) -> usize {
    LEAF_CELL_HEADER + key_len + val_len
}

pub const fn internal_cell_size(key_len: usize, val_len: usize) -> usize {
    INTERNAL_CELL_HEADER + key_len + val_len
}

/// Space (cell plus slot) the largest separator can need in an internal node.
pub const fn max_internal_need(page_size: usize) -> usize {
    internal_cell_size(max_key_len(page_size), MAX_VALUE_LEN) + SLOT_SIZE
}

/// A point to search for, in the tree's order.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    /// The point `(key, val)`; unique trees ignore `val`. `(key, [])` is the first
    /// possible entry with `key`, since the empty value sorts first.
    At { key: &'a [u8], val: &'a [u8] },
    /// Just past every entry whose key is `key`.
    After(&'a [u8]),
    /// Past every entry.
    End,
}

/// Where the entry or separator `(key, val)` lies relative to `t`.
#[inline(always)]
pub fn cmp_target(unique: bool, key: &[u8], val: &[u8], t: Target<'_>) -> Ordering {
    match t {
        Target::At { key: tk, val: tv } => match Ord::cmp(key, tk) {
            Ordering::Equal if !unique => Ord::cmp(val, tv),
            o => o,
        },
        Target::After(tk) => match Ord::cmp(key, tk) {
            Ordering::Greater => Ordering::Greater,
            _ => Ordering::Less,
        },
        Target::End => Ordering::Less,
    }
}

/// Order of two entries (or separators) in the tree's order.
#[inline]
pub fn cmp_entries(unique: bool, a: (&[u8], &[u8]), b: (&[u8], &[u8])) -> Ordering {
    match Ord::cmp(a.0, b.0) {
        Ordering::Equal if !unique => Ord::cmp(a.1, b.1),
        o => o,
    }
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The shortest separator `S` with `left < S <= right`, given `left < right`.
pub fn separator(unique: bool, left: (&[u8], &[u8]), right: (&[u8], &[u8])) -> (Vec<u8>, Vec<u8>) {
    let (lk, lv) = left;
    let (rk, rv) = right;
    if unique || lk != rk {
        let n = (common_prefix(lk, rk) + 1).min(rk.len());
        (rk[..n].to_vec(), Vec::new())
    } else {
        let n = (common_prefix(lv, rv) + 1).min(rv.len());
        (rk.to_vec(), rv[..n].to_vec())
    }
}

#[cold]
fn bad_cell(id: PageId, i: usize) -> Error {
    Error::corrupt(id, format!("cell {i} extends past the end of the page"))
}

/// A validated read-only view of a node page. Construction checks the header (kind,
/// level, slot array and content area bounds) so that reading any slot is in bounds;
/// cell accessors check each cell against the page end, so a corrupt page yields
/// [`Error::CorruptPage`], never a panic.
#[derive(Clone, Copy)]
pub struct NodeRef<'a> {
    buf: &'a [u8],
    id: PageId,
    count: usize,
    leaf: bool,
}

impl<'a> NodeRef<'a> {
    #[inline]
    pub fn new(buf: &'a [u8], id: PageId) -> Result<Self> {
        let leaf = match page::page_kind(buf) {
            Some(PageKind::BTreeLeaf) => true,
            Some(PageKind::BTreeInternal) => false,
            other => {
                return Err(Error::corrupt(
                    id,
                    format!("expected a B+tree page, found {other:?}"),
                ));
            }
        };
        let count = read_u16(buf, COUNT_OFF) as usize;
        let content = read_u32(buf, CONTENT_OFF) as usize;
        if SLOT_ARRAY_OFF + SLOT_SIZE * count > content || content > buf.len() {
            return Err(Error::corrupt(
                id,
                format!("{count} slots do not fit below content start {content}"),
            ));
        }
        if leaf != (buf[LEVEL_OFF] == 0) {
            return Err(Error::corrupt(
                id,
                format!(
                    "{:?} page at level {}",
                    page::page_kind(buf),
                    buf[LEVEL_OFF]
                ),
            ));
        }
        Ok(NodeRef {
            buf,
            id,
            count,
            leaf,
        })
    }

    /// Like [`NodeRef::new`], and checks the node is at `level`.
    #[inline]
    pub fn at_level(buf: &'a [u8], id: PageId, level: u8) -> Result<Self> {
        let node = Self::new(buf, id)?;
        if node.level() != level {
            return Err(Error::corrupt(
                id,
                format!(
                    "node at level {} where level {level} was expected",
                    node.level()
                ),
            ));
        }
        Ok(node)
    }

    pub fn id(&self) -> PageId {
        self.id
    }
    pub fn bytes(&self) -> &'a [u8] {
        self.buf
    }
    #[inline]
    pub fn is_leaf(&self) -> bool {
        self.leaf
    }
    #[inline]
    pub fn count(&self) -> usize {
        self.count
    }
    #[inline]
    pub fn level(&self) -> u8 {
        self.buf[LEVEL_OFF]
    }
    pub fn flags(&self) -> u16 {
        page::page_flags(self.buf)
    }
    pub fn is_root(&self) -> bool {
        self.flags() & FLAG_ROOT != 0
    }
    pub fn is_unique(&self) -> bool {
        self.flags() & FLAG_UNIQUE != 0
    }
    pub fn content_start(&self) -> usize {
        read_u32(self.buf, CONTENT_OFF) as usize
    }
    pub fn garbage(&self) -> usize {
        read_u16(self.buf, GARBAGE_OFF) as usize
    }
    /// Total free bytes (contiguous gap plus garbage).
    pub fn free_space(&self) -> usize {
        self.content_start() - (SLOT_ARRAY_OFF + SLOT_SIZE * self.count) + self.garbage()
    }
    /// Leaf: previous leaf. Internal: leftmost child.
    pub fn left(&self) -> PageId {
        PageId(read_u32(self.buf, LEFT_OFF))
    }
    /// Leaf: next leaf. Internal: zero.
    pub fn right(&self) -> PageId {
        PageId(read_u32(self.buf, RIGHT_OFF))
    }
    pub fn prev(&self) -> PageId {
        self.left()
    }
    pub fn next(&self) -> PageId {
        self.right()
    }

    /// Offset of cell `i`; `i < count`, which the header check keeps inside the page.
    #[inline]
    pub fn slot(&self, i: usize) -> usize {
        debug_assert!(i < self.count);
        read_u16(self.buf, SLOT_ARRAY_OFF + SLOT_SIZE * i) as usize
    }

    /// Leaf entry `i` as `(key_start, key_end, value_end)`, `None` if it overruns the
    /// page. The search loops use these `Option` forms: building an error is cold.
    #[inline(always)]
    fn leaf_span_opt(&self, i: usize) -> Option<(usize, usize, usize)> {
        let off = self.slot(i);
        let b = self.buf;
        let hdr = b.get(off..off + LEAF_CELL_HEADER)?;
        let ks = off + LEAF_CELL_HEADER;
        let ke = ks + u16::from_le_bytes([hdr[0], hdr[1]]) as usize;
        let ve = ke + hdr[2] as usize;
        if ve > b.len() {
            return None;
        }
        Some((ks, ke, ve))
    }

    /// Internal cell `i` as `(child, key, value)`, `None` if it overruns the page.
    #[inline(always)]
    fn internal_cell_opt(&self, i: usize) -> Option<(PageId, &'a [u8], &'a [u8])> {
        let off = self.slot(i);
        let b = self.buf;
        let hdr = b.get(off..off + INTERNAL_CELL_HEADER)?;
        let child = PageId(u32::from_le_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]));
        let ks = off + INTERNAL_CELL_HEADER;
        let ke = ks + u16::from_le_bytes([hdr[4], hdr[5]]) as usize;
        let ve = ke + hdr[6] as usize;
        let kv = b.get(ks..ve)?;
        let (k, v) = kv.split_at(ke - ks);
        Some((child, k, v))
    }

    /// Leaf entry `i` as `(key_start, key_end, value_end)` offsets into the page.
    #[inline]
    pub fn leaf_span(&self, i: usize) -> Result<(usize, usize, usize)> {
        self.leaf_span_opt(i).ok_or_else(|| bad_cell(self.id, i))
    }

    /// Leaf entry `i` as `(key, value)`.
    #[inline]
    pub fn leaf_entry(&self, i: usize) -> Result<(&'a [u8], &'a [u8])> {
        let (ks, ke, ve) = self.leaf_span(i)?;
        Ok((&self.buf[ks..ke], &self.buf[ke..ve]))
    }

    /// Internal cell `i` as `(child, separator key, separator value)`.
    #[inline]
    pub fn internal_cell(&self, i: usize) -> Result<(PageId, &'a [u8], &'a [u8])> {
        self.internal_cell_opt(i)
            .ok_or_else(|| bad_cell(self.id, i))
    }

    /// Separator `(key, value)` of internal cell `i`.
    #[inline]
    pub fn separator(&self, i: usize) -> Result<(&'a [u8], &'a [u8])> {
        let (_, k, v) = self.internal_cell(i)?;
        Ok((k, v))
    }

    /// Child `i` of an internal node, `0 <= i <= count`.
    #[inline]
    pub fn child(&self, i: usize) -> Result<PageId> {
        let child = if i == 0 {
            self.left()
        } else {
            let off = self.slot(i - 1);
            if off + 4 > self.buf.len() {
                return Err(bad_cell(self.id, i - 1));
            }
            PageId(read_u32(self.buf, off))
        };
        if child.is_none() {
            return Err(Error::corrupt(self.id, format!("child {i} is a null link")));
        }
        Ok(child)
    }

    /// Size in bytes of cell `i`, checked against the page end.
    pub fn cell_size(&self, i: usize) -> Result<usize> {
        let off = self.slot(i);
        let end = if self.leaf {
            self.leaf_span(i)?.2
        } else {
            let (_, k, v) = self.internal_cell(i)?;
            off + internal_cell_size(k.len(), v.len())
        };
        Ok(end - off)
    }

    /// Leaf: index of the first entry that is not before `t`.
    #[inline]
    pub fn lower_bound(&self, unique: bool, t: Target<'_>) -> Result<usize> {
        let b = self.buf;
        // Branch-free halving (the direction becomes a conditional move), as in
        // `slice::binary_search_by`: the comparisons are unpredictable.
        let (mut base, mut size) = (0, self.count);
        while size > 0 {
            let half = size / 2;
            let mid = base + half;
            let Some((ks, ke, ve)) = self.leaf_span_opt(mid) else {
                return Err(bad_cell(self.id, mid));
            };
            let before = cmp_target(unique, &b[ks..ke], &b[ke..ve], t) == Ordering::Less;
            base = if before { mid + 1 } else { base };
            size = if before { size - half - 1 } else { half };
        }
        Ok(base)
    }

    /// Internal: index of the child whose key range holds `t`, i.e. the number of
    /// separators `S <= t`.
    #[inline]
    pub fn child_index(&self, unique: bool, t: Target<'_>) -> Result<usize> {
        let (mut base, mut size) = (0, self.count);
        while size > 0 {
            let half = size / 2;
            let mid = base + half;
            let Some((_, k, v)) = self.internal_cell_opt(mid) else {
                return Err(bad_cell(self.id, mid));
            };
            let not_after = cmp_target(unique, k, v, t) != Ordering::Greater;
            base = if not_after { mid + 1 } else { base };
            size = if not_after { size - half - 1 } else { half };
        }
        Ok(base)
    }
}

/// The free gap between the slot array and the cell content area as (offset, length),
/// when the node header describes it consistently (`None` otherwise). The WAL leaves it
/// out of the page's frame (`crate::wal`); nothing reads it.
///
/// Cell reads do not check that a cell lies at or above the content start, so a
/// header whose content start were too high (a bug, a flipped bit in memory) would
/// put live cells in the gap, and the WAL would bring them back as zeros: a node any
/// of whose slots points into the gap has no gap (it is logged whole).
pub(crate) fn free_gap(buf: &[u8]) -> Option<(usize, usize)> {
    let count = read_u16(buf, COUNT_OFF) as usize;
    let start = SLOT_ARRAY_OFF + SLOT_SIZE * count;
    let content = read_u32(buf, CONTENT_OFF) as usize;
    if start > content || content > buf.len() {
        return None;
    }
    // The lowest slot, as a minimum over the whole array (no early exit), which the
    // compiler vectorizes: a commit logs every changed node, and testing slot by slot
    // cost a few instructions per cell (about 14k per commit of a Wisconsin DELETE on
    // two non-unique indexes of 8 KiB leaves).
    let lowest = buf[SLOT_ARRAY_OFF..start]
        .chunks_exact(SLOT_SIZE)
        .fold(u16::MAX, |m, s| m.min(u16::from_le_bytes([s[0], s[1]])));
    (count == 0 || lowest as usize >= content).then(|| (start, content - start))
}

/// Formats `buf` as an empty node of `level` (a leaf at level 0) with root `flags`.
pub fn init_node(buf: &mut [u8], id: PageId, level: u8, flags: u16) {
    let kind = if level == 0 {
        PageKind::BTreeLeaf
    } else {
        PageKind::BTreeInternal
    };
    page::format_page(buf, id, kind);
    page::set_page_flags(buf, flags);
    let len = buf.len() as u32;
    write_u32(buf, CONTENT_OFF, len);
    buf[LEVEL_OFF] = level;
}

/// Sets the previous-leaf link (leaves) or the leftmost child (internal nodes).
pub fn set_left(buf: &mut [u8], id: PageId) {
    write_u32(buf, LEFT_OFF, id.0);
}

/// Sets the next-leaf link.
pub fn set_right(buf: &mut [u8], id: PageId) {
    write_u32(buf, RIGHT_OFF, id.0);
}

fn set_count(buf: &mut [u8], n: usize) {
    write_u16(buf, COUNT_OFF, n as u16);
}

fn set_content(buf: &mut [u8], off: usize) {
    write_u32(buf, CONTENT_OFF, off as u32);
}

fn set_garbage(buf: &mut [u8], g: usize) {
    write_u16(buf, GARBAGE_OFF, g as u16);
}

/// Rewrites the cells of a node contiguously at the end of the page, dropping garbage.
fn compact(buf: &mut [u8], id: PageId) -> Result<()> {
    let old = buf.to_vec();
    let node = NodeRef::new(&old, id)?;
    let n = node.count();
    let mut content = buf.len();
    for i in 0..n {
        let off = node.slot(i);
        let size = node.cell_size(i)?;
        content = content
            .checked_sub(size)
            .filter(|&c| c >= SLOT_ARRAY_OFF + SLOT_SIZE * n)
            .ok_or_else(|| Error::corrupt(id, "cells overflow the page during compaction"))?;
        buf[content..content + size].copy_from_slice(&old[off..off + size]);
        write_u16(buf, SLOT_ARRAY_OFF + SLOT_SIZE * i, content as u16);
    }
    set_content(buf, content);
    set_garbage(buf, 0);
    Ok(())
}

/// Makes room for a `size`-byte cell at slot `i` (shifting later slots) and returns its
/// offset, or `None` if the node lacks the space.
fn reserve(buf: &mut [u8], id: PageId, i: usize, size: usize) -> Result<Option<usize>> {
    let node = NodeRef::new(buf, id)?;
    let n = node.count();
    if i > n {
        return Err(Error::corrupt(id, format!("insert at slot {i} of {n}")));
    }
    if node.free_space() < size + SLOT_SIZE || n >= u16::MAX as usize {
        return Ok(None);
    }
    let needed = SLOT_ARRAY_OFF + SLOT_SIZE * (n + 1) + size;
    if node.content_start() < needed {
        compact(buf, id)?;
        if (read_u32(buf, CONTENT_OFF) as usize) < needed {
            return Err(Error::corrupt(
                id,
                "garbage count overstates the free space",
            ));
        }
    }
    let off = read_u32(buf, CONTENT_OFF) as usize - size;
    let slot = SLOT_ARRAY_OFF + SLOT_SIZE * i;
    buf.copy_within(slot..SLOT_ARRAY_OFF + SLOT_SIZE * n, slot + SLOT_SIZE);
    write_u16(buf, slot, off as u16);
    set_count(buf, n + 1);
    set_content(buf, off);
    Ok(Some(off))
}

/// Inserts leaf entry `(key, val)` at slot `i`; `Ok(false)` if it does not fit.
pub fn insert_leaf_entry(
    buf: &mut [u8],
    id: PageId,
    i: usize,
    key: &[u8],
    val: &[u8],
) -> Result<bool> {
    let Some(off) = reserve(buf, id, i, leaf_cell_size(key.len(), val.len()))? else {
        return Ok(false);
    };
    write_u16(buf, off, key.len() as u16);
    buf[off + 2] = val.len() as u8;
    let ks = off + LEAF_CELL_HEADER;
    buf[ks..ks + key.len()].copy_from_slice(key);
    buf[ks + key.len()..ks + key.len() + val.len()].copy_from_slice(val);
    Ok(true)
}

/// Inserts internal cell `(child, key, val)` at slot `i`; `Ok(false)` if it does not fit.
pub fn insert_internal_cell(
    buf: &mut [u8],
    id: PageId,
    i: usize,
    child: PageId,
    key: &[u8],
    val: &[u8],
) -> Result<bool> {
    let Some(off) = reserve(buf, id, i, internal_cell_size(key.len(), val.len()))? else {
        return Ok(false);
    };
    write_u32(buf, off, child.0);
    write_u16(buf, off + 4, key.len() as u16);
    buf[off + 6] = val.len() as u8;
    let ks = off + INTERNAL_CELL_HEADER;
    buf[ks..ks + key.len()].copy_from_slice(key);
    buf[ks + key.len()..ks + key.len() + val.len()].copy_from_slice(val);
    Ok(true)
}

/// Appends a leaf entry after the last one (bulk loading, splits).
pub fn push_leaf_entry(buf: &mut [u8], id: PageId, key: &[u8], val: &[u8]) -> Result<bool> {
    let n = NodeRef::new(buf, id)?.count();
    insert_leaf_entry(buf, id, n, key, val)
}

/// Appends an internal cell after the last one (bulk loading, splits).
pub fn push_internal_cell(
    buf: &mut [u8],
    id: PageId,
    child: PageId,
    key: &[u8],
    val: &[u8],
) -> Result<bool> {
    let n = NodeRef::new(buf, id)?.count();
    insert_internal_cell(buf, id, n, child, key, val)
}

/// Removes cell `i`, leaving its bytes as garbage (or reclaiming them if the cell is the
/// lowest in the content area).
pub fn remove_cell(buf: &mut [u8], id: PageId, i: usize) -> Result<()> {
    let node = NodeRef::new(buf, id)?;
    let n = node.count();
    if i >= n {
        return Err(Error::corrupt(id, format!("remove slot {i} of {n}")));
    }
    let off = node.slot(i);
    let size = node.cell_size(i)?;
    let content = node.content_start();
    let garbage = node.garbage();
    let slot = SLOT_ARRAY_OFF + SLOT_SIZE * i;
    buf.copy_within(slot + SLOT_SIZE..SLOT_ARRAY_OFF + SLOT_SIZE * n, slot);
    set_count(buf, n - 1);
    if n == 1 {
        set_content(buf, buf.len());
        set_garbage(buf, 0);
    } else if off == content {
        set_content(buf, content + size);
    } else {
        set_garbage(buf, garbage + size);
    }
    Ok(())
}

/// Removes child `ci` of an internal node together with the separator that bounds it
/// from below (for the leftmost child: the first cell's child becomes the leftmost).
pub fn remove_child(buf: &mut [u8], id: PageId, ci: usize) -> Result<()> {
    if ci == 0 {
        let node = NodeRef::new(buf, id)?;
        if node.count() == 0 {
            return Err(Error::corrupt(id, "removing the only child of a node"));
        }
        let (first, _, _) = node.internal_cell(0)?;
        set_left(buf, first);
        remove_cell(buf, id, 0)
    } else {
        remove_cell(buf, id, ci - 1)
    }
}

/// Copies the node body (everything after the common page header) of `src` into `dst`,
/// formatted as page `dst_id` with `flags`.
pub fn copy_node(src: &[u8], dst: &mut [u8], dst_id: PageId, flags: u16) -> Result<()> {
    let kind = page::page_kind(src)
        .ok_or_else(|| Error::corrupt(dst_id, "copying a page of unknown kind"))?;
    page::format_page(dst, dst_id, kind);
    page::set_page_flags(dst, flags);
    dst[PAGE_HEADER_SIZE..].copy_from_slice(&src[PAGE_HEADER_SIZE..]);
    Ok(())
}

/// Chooses where to split a sequence of cells whose sizes (including slots) are
/// `sizes`, so that both halves fit in `usable` bytes and the left half is as close to
/// `target` bytes as possible. For a leaf the halves are `[..k]` and `[k..]`; for an
/// internal node cell `k` moves up and the halves are `[..k]` and `[k+1..]`.
pub fn choose_split(
    sizes: &[usize],
    usable: usize,
    target: usize,
    internal: bool,
    id: PageId,
) -> Result<usize> {
    let total: usize = sizes.iter().sum();
    let m = sizes.len();
    let last = if internal { m.saturating_sub(1) } else { m };
    let mut best: Option<(usize, usize)> = None;
    let mut left = 0;
    for k in 1..last {
        left += sizes[k - 1];
        let right = total - left - if internal { sizes[k] } else { 0 };
        if left <= usable && right <= usable {
            let score = left.abs_diff(target);
            if best.is_none_or(|(_, s)| score < s) {
                best = Some((k, score));
            }
        }
    }
    best.map(|(k, _)| k)
        .ok_or_else(|| Error::corrupt(id, "no split point leaves both halves within a page"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_compact_keeps_cells() {
        let mut buf = vec![0u8; 4096];
        let id = PageId(3);
        init_node(&mut buf, id, 0, 0);
        let mut n = 0;
        while insert_leaf_entry(&mut buf, id, n / 2, &[n as u8; 40], &[1, 2, 3]).unwrap() {
            n += 1;
        }
        assert!(n > 50);
        // Remove every other cell, then keep inserting: forces compaction.
        for i in (0..n / 2).rev() {
            remove_cell(&mut buf, id, i * 2).unwrap();
        }
        let before = NodeRef::new(&buf, id).unwrap().count();
        let mut added = 0;
        while insert_leaf_entry(&mut buf, id, 0, b"zz", b"").unwrap() {
            added += 1;
        }
        assert!(added > n / 2);
        let node = NodeRef::new(&buf, id).unwrap();
        assert_eq!(node.count(), before + added);
        assert!(node.free_space() < leaf_cell_size(2, 0) + SLOT_SIZE);
        assert_eq!(node.leaf_entry(0).unwrap(), (&b"zz"[..], &b""[..]));
    }

    #[test]
    fn separators_are_short_and_between() {
        for unique in [true, false] {
            type Point = (&'static [u8], &'static [u8]);
            let cases: &[(Point, Point)] = &[
                ((b"abc", b"1"), (b"abd", b"0")),
                ((b"ab", b"1"), (b"abzzz", b"0")),
                ((b"", b""), (b"a", b"")),
                ((b"abc", b"x"), (b"b", b"")),
            ];
            for &(l, r) in cases {
                let (sk, sv) = separator(unique, l, r);
                let s = (&sk[..], &sv[..]);
                assert_eq!(cmp_entries(unique, l, s), Ordering::Less, "{l:?} {s:?}");
                assert_ne!(cmp_entries(unique, s, r), Ordering::Greater, "{s:?} {r:?}");
            }
        }
        let (sk, sv) = separator(false, (b"k", b"aaa1"), (b"k", b"aab"));
        assert_eq!((&sk[..], &sv[..]), (&b"k"[..], &b"aab"[..]));
        let (sk, sv) = separator(true, (b"apple", b""), (b"banana", b""));
        assert_eq!((&sk[..], &sv[..]), (&b"b"[..], &b""[..]));
    }
}
