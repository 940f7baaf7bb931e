//! Range scans over a B+tree's leaf chain, in either direction.
//!
//! A [`Cursor`] holds a shared guard on one leaf at a time: stepping past the end of a
//! leaf releases it before taking the sibling (the snapshot a reader sees does not
//! change under it, so nothing is lost in between). Entries can be read by reference
//! per step ([`Cursor::next_entry`]) or copied out through the [`Iterator`] impl.

use std::ops::Bound;

use crate::access::{PageRead, PageReadGuard};
use crate::error::{Error, Result};

use super::node::NodeRef;

/// Scan order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Ascending keys.
    Forward,
    /// Descending keys.
    Backward,
}

/// A position in a range scan. Created by [`super::BTree::range`] and
/// [`super::BTree::scan`].
pub struct Cursor<'r, R: PageRead + ?Sized> {
    r: &'r R,
    dir: Direction,
    /// The bound the initial seek did not enforce: the upper bound going forward, the
    /// lower bound going backward.
    stop: Bound<Vec<u8>>,
    /// The current leaf; `None` once the scan is over.
    leaf: Option<PageReadGuard>,
    /// Forward: index of the next entry to visit. Backward: one past it.
    next: usize,
    /// The entry the cursor is on, as `(key_start, key_end, value_end)` in `leaf`.
    cur: Option<(usize, usize, usize)>,
}

impl<'r, R: PageRead + ?Sized> Cursor<'r, R> {
    pub(crate) fn new(
        r: &'r R,
        leaf: PageReadGuard,
        pos: usize,
        dir: Direction,
        stop: Bound<Vec<u8>>,
    ) -> Self {
        Cursor {
            r,
            dir,
            stop,
            leaf: Some(leaf),
            next: pos,
            cur: None,
        }
    }

    pub fn direction(&self) -> Direction {
        self.dir
    }

    /// Whether `key` is on the near side of the stop bound.
    fn within(&self, key: &[u8]) -> bool {
        match (&self.stop, self.dir) {
            (Bound::Unbounded, _) => true,
            (Bound::Included(s), Direction::Forward) => key <= s.as_slice(),
            (Bound::Excluded(s), Direction::Forward) => key < s.as_slice(),
            (Bound::Included(s), Direction::Backward) => key >= s.as_slice(),
            (Bound::Excluded(s), Direction::Backward) => key > s.as_slice(),
        }
    }

    fn finish(&mut self) {
        self.leaf = None;
        self.cur = None;
    }

    /// Moves to the next entry in the scan's direction; `Ok(false)` when the range is
    /// exhausted. After `Ok(true)`, [`Cursor::current`] returns the entry.
    pub fn advance(&mut self) -> Result<bool> {
        let result = self.step();
        if !matches!(result, Ok(true)) {
            self.finish();
        }
        result
    }

    fn step(&mut self) -> Result<bool> {
        loop {
            let Some(g) = &self.leaf else {
                return Ok(false);
            };
            let id = g.id();
            let node = NodeRef::at_level(g, id, 0)?;
            let at = match self.dir {
                Direction::Forward if self.next < node.count() => Some(self.next),
                Direction::Backward if self.next > 0 => Some(self.next - 1),
                _ => None,
            };
            if let Some(i) = at {
                let span = node.leaf_span(i)?;
                if !self.within(&g[span.0..span.1]) {
                    return Ok(false);
                }
                self.cur = Some(span);
                self.next = match self.dir {
                    Direction::Forward => i + 1,
                    Direction::Backward => i,
                };
                return Ok(true);
            }
            // Past this leaf: release it, then take the sibling.
            let sibling = match self.dir {
                Direction::Forward => node.next(),
                Direction::Backward => node.prev(),
            };
            self.leaf = None;
            self.cur = None;
            if sibling.is_none() {
                return Ok(false);
            }
            let sg = self.r.read_page(sibling)?;
            let snode = NodeRef::at_level(&sg, sibling, 0)?;
            let back = match self.dir {
                Direction::Forward => snode.prev(),
                Direction::Backward => snode.next(),
            };
            if back != id {
                return Err(Error::corrupt(
                    sibling,
                    format!("sibling link points to {back}, not to neighbour {id}"),
                ));
            }
            self.next = match self.dir {
                Direction::Forward => 0,
                Direction::Backward => snode.count(),
            };
            self.leaf = Some(sg);
        }
    }

    /// The entry the cursor is on, by reference into the leaf page.
    pub fn current(&self) -> Option<(&[u8], &[u8])> {
        let (ks, ke, ve) = self.cur?;
        let g = self.leaf.as_ref()?;
        Some((&g[ks..ke], &g[ke..ve]))
    }

    /// Advances and returns the new entry by reference; `Ok(None)` at the end.
    pub fn next_entry(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if self.advance()? {
            Ok(self.current())
        } else {
            Ok(None)
        }
    }
}

impl<R: PageRead + ?Sized> Iterator for Cursor<'_, R> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    /// Copies out the next entry. After an error the iterator is exhausted.
    fn next(&mut self) -> Option<Self::Item> {
        match self.next_entry() {
            Ok(Some((k, v))) => Some(Ok((k.to_vec(), v.to_vec()))),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

/// The values stored under one key of a non-unique tree, in ascending order.
pub struct Values<'r, R: PageRead + ?Sized> {
    cursor: Cursor<'r, R>,
}

impl<'r, R: PageRead + ?Sized> Values<'r, R> {
    pub(crate) fn new(cursor: Cursor<'r, R>) -> Self {
        Values { cursor }
    }
}

impl<R: PageRead + ?Sized> Iterator for Values<'_, R> {
    type Item = Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.cursor.next_entry() {
            Ok(Some((_, v))) => Some(Ok(v.to_vec())),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }
}
