//! The B+tree access method: an ordered map from byte-string keys to small values,
//! stored in pages reached through [`PageRead`] / [`PageWrite`].
//!
//! Node layouts, the ordering of entries and separators, and the invariants checked by
//! [`BTree::verify`] are documented in [`super::node`].
//!
//! # Keys, values and uniqueness
//!
//! Keys are byte strings of at most [`max_key_len`]`(page_size)` bytes (an eighth of a
//! page) compared with `memcmp`; values are at most [`MAX_VALUE_LEN`] bytes. A unique
//! tree holds each key once ([`Error::DuplicateKey`] on a second insert). A non-unique
//! tree orders entries by `(key, value)`, so the duplicates of a key are distinct
//! entries (an index stores `(key, tuple id)`); inserting an existing `(key, value)`
//! pair again is also [`Error::DuplicateKey`].
//!
//! # The root never moves
//!
//! The root page id is fixed for the life of the tree, so the catalog stores it once.
//! The root carries the tree's flags (root, unique) and its level is the height minus
//! one. When the root splits, its contents move to a new page which then splits as
//! usual, and the root is reformatted as an internal node one level higher over the
//! two halves.
//!
//! # Latching
//!
//! Readers descend hand over hand with shared guards (at most two at a time) and
//! cursors hold one leaf guard at a time. A writer first descends with shared guards,
//! recording the path (page ids, chosen child, free space) in a fixed-size array; in
//! the common case it then takes the single leaf for writing and is done, so only the
//! leaf page is dirtied. When the leaf must split, the writer takes exclusive guards
//! top-down on the path, from the lowest ancestor that has room for any separator (or
//! the root) down to the leaf, then the leaf's right sibling (left to right), and does
//! the splits bottom-up while holding them. Removing an empty leaf likewise latches the
//! affected ancestors top-down, then the left sibling, the leaf and the right sibling.
//! A tree must not be changed while a cursor on it is open in the same thread (the
//! cursor's shared guard would block the writer's exclusive one).
//!
//! # Errors in the middle of a change
//!
//! A split or a leaf removal changes several pages. If page access fails part way (an
//! I/O error, a full pool), the pages already changed are not put back: the tree is
//! only consistent again once the write transaction that made the change is rolled
//! back, which discards its page copies. Corruption found on the way is reported as
//! [`Error::CorruptPage`]; nothing here panics on a bad page.
//!
//! # Delete policy
//!
//! Deleting removes the entry and leaves underfull nodes alone (as PostgreSQL does):
//! nodes are never merged or rebalanced. The one exception is a leaf that becomes
//! empty: unless it is the root it is unlinked from its siblings and freed, and its
//! parent drops the link to it together with the separator bounding it from below. An
//! internal node left without children is removed from its parent the same way, up to
//! the root; if the whole tree empties, the root becomes an empty leaf again. Internal
//! nodes may therefore shrink to a single child, and the height never decreases. So no
//! leaf other than the root is ever empty, and a tree emptied by deletes is back to
//! one page.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::ops::Bound;

use crate::access::{PageRead, PageReadGuard, PageWrite, PageWriteGuard};
use crate::error::{Error, Result};
use crate::ids::PageId;
use crate::page;

use super::cursor::{Cursor, Direction, Values};
use super::node::{
    self, FLAG_ROOT, FLAG_UNIQUE, MAX_HEIGHT, MAX_VALUE_LEN, NodeRef, SLOT_SIZE, Target,
    cmp_entries, internal_cell_size, leaf_cell_size, max_internal_need, max_key_len, usable_space,
};

/// Fraction (in percent) of a node that [`BTree::bulk_build`] fills, and that a split
/// of the rightmost node leaves in the left half when appending at the end.
pub const FILL_PERCENT: usize = 90;

/// A B+tree, named by its root page. It is a plain handle (`Copy`): the state lives in
/// the pages, so any number of handles on the same root can be used with any
/// [`PageRead`] / [`PageWrite`] that sees those pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BTree {
    root: PageId,
}

/// What [`BTree::verify`] saw in a tree that satisfies every invariant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct VerifyReport {
    pub unique: bool,
    /// Number of levels, 1 for a tree that is a single leaf.
    pub height: u32,
    /// Number of entries in the leaves.
    pub entries: u64,
    pub leaf_pages: u64,
    pub internal_pages: u64,
}

impl VerifyReport {
    /// Every page of the tree.
    pub fn pages(&self) -> u64 {
        self.leaf_pages + self.internal_pages
    }
}

/// Checks that an entry fits the tree's limits.
fn check_entry(page_size: usize, key: &[u8], value: &[u8]) -> Result<()> {
    let limit = max_key_len(page_size);
    if key.len() > limit {
        return Err(Error::TooLarge {
            what: "B+tree key",
            size: key.len(),
            limit,
        });
    }
    if value.len() > MAX_VALUE_LEN {
        return Err(Error::TooLarge {
            what: "B+tree value",
            size: value.len(),
            limit: MAX_VALUE_LEN,
        });
    }
    Ok(())
}

/// One node on a writer's root-to-leaf path, as seen by the shared-guard descent.
#[derive(Clone, Copy, Default)]
struct Step {
    id: PageId,
    /// Internal nodes: the child index taken.
    child: usize,
    count: usize,
    free: usize,
    /// No node to the right on this level.
    rightmost: bool,
}

/// A writer's root-to-leaf path (`steps[0]` is the root, `steps[len - 1]` the leaf).
struct Path {
    steps: [Step; MAX_HEIGHT],
    len: usize,
    unique: bool,
    /// Position in the leaf of the first entry not before the target.
    pos: usize,
    leaf_prev: PageId,
    leaf_next: PageId,
}

impl Path {
    fn leaf(&self) -> &Step {
        &self.steps[self.len - 1]
    }
}

/// Change still to be made at some level while splitting bottom-up.
enum Pending<'a> {
    /// Insert leaf entry at `pos`.
    Entry {
        pos: usize,
        key: &'a [u8],
        val: &'a [u8],
    },
    /// Insert internal cell (separator, right child) at cell index `pos`.
    Cell {
        pos: usize,
        key: Vec<u8>,
        val: Vec<u8>,
        child: PageId,
    },
}

impl BTree {
    /// Creates an empty tree: one root page, a leaf.
    pub fn create<W: PageWrite + ?Sized>(w: &W, unique: bool) -> Result<BTree> {
        let mut g = w.allocate_page()?;
        let id = g.id();
        node::init_node(&mut g, id, 0, root_flags(unique));
        Ok(BTree { root: id })
    }

    /// A handle on the tree whose root is `root` (as returned by [`BTree::root`]).
    pub fn open(root: PageId) -> BTree {
        BTree { root }
    }

    /// The root page id; it never changes for the life of the tree.
    pub fn root(&self) -> PageId {
        self.root
    }

    /// Whether the tree rejects equal keys.
    pub fn is_unique<R: PageRead + ?Sized>(&self, r: &R) -> Result<bool> {
        let g = r.read_page(self.root)?;
        Ok(self.root_node(&g)?.is_unique())
    }

    /// Number of levels (1 for a single leaf).
    pub fn height<R: PageRead + ?Sized>(&self, r: &R) -> Result<u32> {
        let g = r.read_page(self.root)?;
        Ok(self.root_node(&g)?.level() as u32 + 1)
    }

    fn root_node<'a>(&self, g: &'a PageReadGuard) -> Result<NodeRef<'a>> {
        let node = NodeRef::new(g, self.root)?;
        if !node.is_root() {
            return Err(Error::corrupt(self.root, "not the root of a B+tree"));
        }
        if node.level() as usize >= MAX_HEIGHT {
            return Err(Error::corrupt(
                self.root,
                format!(
                    "tree height {} exceeds {MAX_HEIGHT}",
                    node.level() as usize + 1
                ),
            ));
        }
        Ok(node)
    }

    /// Descends with shared guards to the leaf whose range holds `t`. Returns the leaf,
    /// the position of the first entry in it not before `t`, and the unique flag.
    /// Allocation-free; holds at most two guards at a time.
    pub(crate) fn descend<R: PageRead + ?Sized>(
        &self,
        r: &R,
        t: Target<'_>,
    ) -> Result<(PageReadGuard, usize, bool)> {
        let mut g = r.read_page(self.root)?;
        let root = self.root_node(&g)?;
        let unique = root.is_unique();
        let mut level = root.level();
        loop {
            let node = NodeRef::at_level(&g, g.id(), level)?;
            if node.is_leaf() {
                let pos = node.lower_bound(unique, t)?;
                return Ok((g, pos, unique));
            }
            let child = node.child(node.child_index(unique, t)?)?;
            level -= 1;
            g = r.read_page(child)?;
        }
    }

    /// [`BTree::descend`] for writers: records the path and returns it with the shared
    /// guard on the leaf (the only guard still held).
    fn descend_path<R: PageRead + ?Sized>(
        &self,
        r: &R,
        t: Target<'_>,
    ) -> Result<(Path, PageReadGuard)> {
        let mut path = Path {
            steps: [Step::default(); MAX_HEIGHT],
            len: 0,
            unique: false,
            pos: 0,
            leaf_prev: PageId::NONE,
            leaf_next: PageId::NONE,
        };
        let mut g = r.read_page(self.root)?;
        let root = self.root_node(&g)?;
        path.unique = root.is_unique();
        let mut level = root.level();
        let mut rightmost = true;
        loop {
            let node = NodeRef::at_level(&g, g.id(), level)?;
            let step = &mut path.steps[path.len];
            path.len += 1;
            *step = Step {
                id: g.id(),
                child: 0,
                count: node.count(),
                free: node.free_space(),
                rightmost,
            };
            if node.is_leaf() {
                path.pos = node.lower_bound(path.unique, t)?;
                path.leaf_prev = node.prev();
                path.leaf_next = node.next();
                return Ok((path, g));
            }
            let ci = node.child_index(path.unique, t)?;
            step.child = ci;
            rightmost &= ci == node.count();
            let child = node.child(ci)?;
            level -= 1;
            g = r.read_page(child)?;
        }
    }

    /// The value stored under `key`. In a non-unique tree: the smallest value stored
    /// under `key` (see [`BTree::get_all`] for all of them).
    pub fn get<R: PageRead + ?Sized>(&self, r: &R, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let (g, pos, unique) = self.descend(r, Target::At { key, val: &[] })?;
        if !unique {
            let stop = Bound::Included(key.to_vec());
            let mut values = Values::new(Cursor::new(r, g, pos, Direction::Forward, stop));
            return values.next().transpose();
        }
        let node = NodeRef::new(&g, g.id())?;
        if pos < node.count() {
            let (k, v) = node.leaf_entry(pos)?;
            if k == key {
                return Ok(Some(v.to_vec()));
            }
        }
        Ok(None)
    }

    /// Every value stored under `key`, in ascending order.
    pub fn get_all<'r, R: PageRead + ?Sized>(&self, r: &'r R, key: &[u8]) -> Result<Values<'r, R>> {
        let cursor = self.range(
            r,
            Bound::Included(key),
            Bound::Included(key),
            Direction::Forward,
        )?;
        Ok(Values::new(cursor))
    }

    /// A cursor over the entries whose keys lie between `lower` and `upper`, visiting
    /// them in `dir` order.
    pub fn range<'r, R: PageRead + ?Sized>(
        &self,
        r: &'r R,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        dir: Direction,
    ) -> Result<Cursor<'r, R>> {
        let (target, stop) = match dir {
            Direction::Forward => (
                match lower {
                    Bound::Unbounded => Target::At { key: &[], val: &[] },
                    Bound::Included(k) => Target::At { key: k, val: &[] },
                    Bound::Excluded(k) => Target::After(k),
                },
                upper,
            ),
            Direction::Backward => (
                match upper {
                    Bound::Unbounded => Target::End,
                    Bound::Included(k) => Target::After(k),
                    Bound::Excluded(k) => Target::At { key: k, val: &[] },
                },
                lower,
            ),
        };
        let (g, pos, _) = self.descend(r, target)?;
        Ok(Cursor::new(r, g, pos, dir, stop.map(<[u8]>::to_vec)))
    }

    /// A cursor that goes on with a range scan just past the entry `(key, val)` it
    /// last visited (the entry need not exist any more), in `dir` order, until `stop`
    /// (the upper bound going forward, the lower bound going backward). A reader that
    /// hands entries to slow consumers drops its cursor, and the leaf guard it holds,
    /// between runs and resumes here: one descent per run.
    pub fn range_after<'r, R: PageRead + ?Sized>(
        &self,
        r: &'r R,
        key: &[u8],
        val: &[u8],
        stop: Bound<&[u8]>,
        dir: Direction,
    ) -> Result<Cursor<'r, R>> {
        // The first entry not before (key, val): going forward it is skipped if it
        // is that entry; going backward the cursor starts just before it.
        let (g, pos, unique) = self.descend(r, Target::At { key, val })?;
        let mut skip = false;
        if dir == Direction::Forward {
            let node = NodeRef::new(&g, g.id())?;
            if pos < node.count() {
                let (k, v) = node.leaf_entry(pos)?;
                skip = k == key && (unique || v == val);
            }
        }
        let pos = pos + usize::from(skip);
        Ok(Cursor::new(r, g, pos, dir, stop.map(<[u8]>::to_vec)))
    }

    /// A cursor over the whole tree in `dir` order.
    pub fn scan<'r, R: PageRead + ?Sized>(
        &self,
        r: &'r R,
        dir: Direction,
    ) -> Result<Cursor<'r, R>> {
        self.range(r, Bound::Unbounded, Bound::Unbounded, dir)
    }

    /// Inserts `(key, value)`.
    ///
    /// Errors: [`Error::TooLarge`] if the key or value exceeds its limit;
    /// [`Error::DuplicateKey`] if a unique tree holds `key` or a non-unique tree holds
    /// `(key, value)`.
    pub fn insert<W: PageWrite + ?Sized>(&self, w: &W, key: &[u8], value: &[u8]) -> Result<()> {
        check_entry(w.page_size(), key, value)?;
        let t = Target::At { key, val: value };
        let (path, g) = self.descend_path(w, t)?;
        let leaf = *path.leaf();
        // The target's range is this leaf's, so an equal entry would be right at `pos`.
        {
            let node = NodeRef::new(&g, leaf.id)?;
            if path.pos < node.count() {
                let (k, v) = node.leaf_entry(path.pos)?;
                if k == key && (path.unique || v == value) {
                    return Err(Error::DuplicateKey);
                }
            }
        }
        drop(g);
        if leaf.free >= leaf_cell_size(key.len(), value.len()) + SLOT_SIZE {
            let mut g = w.write_page(leaf.id)?;
            if node::insert_leaf_entry(&mut g, leaf.id, path.pos, key, value)? {
                return Ok(());
            }
            return Err(Error::corrupt(
                leaf.id,
                "leaf free space changed under a writer",
            ));
        }
        self.insert_split(w, &path, key, value)
    }

    /// Inserts into a full leaf: latches the affected part of the path top-down and
    /// splits bottom-up.
    fn insert_split<W: PageWrite + ?Sized>(
        &self,
        w: &W,
        path: &Path,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let leaf_idx = path.len - 1;
        // The lowest ancestor sure to absorb a separator stops the split; else the root.
        let need = max_internal_need(w.page_size());
        let mut top = leaf_idx;
        while top > 0 {
            top -= 1;
            if path.steps[top].free >= need {
                break;
            }
        }
        let mut guards: Vec<PageWriteGuard> = Vec::with_capacity(leaf_idx - top + 1);
        for (k, step) in path.steps[top..=leaf_idx].iter().enumerate() {
            let g = w.write_page(step.id)?;
            if let Some(parent) = guards.last() {
                let pnode = NodeRef::new(parent, parent.id())?;
                if pnode.child(path.steps[top + k - 1].child)? != step.id {
                    return Err(Error::corrupt(parent.id(), "path changed under a writer"));
                }
            }
            guards.push(g);
        }
        let mut pending = Pending::Entry {
            pos: path.pos,
            key,
            val: value,
        };
        for k in (top..=leaf_idx).rev() {
            let g = &mut guards[k - top];
            if apply(g, &pending)? {
                return Ok(());
            }
            let step = &path.steps[k];
            if k == 0 {
                return self.split_root(w, g, pending, path.unique);
            }
            let (sk, sv, right) = split_node(w, g, &pending, step.rightmost, path.unique)?;
            pending = Pending::Cell {
                pos: path.steps[k - 1].child,
                key: sk,
                val: sv,
                child: right,
            };
        }
        Err(Error::corrupt(
            path.steps[top].id,
            "node with room for a separator could not take one",
        ))
    }

    /// Splits the root: its contents move to a new page that splits as usual, and the
    /// root becomes an internal node one level higher over the two halves.
    fn split_root<W: PageWrite + ?Sized>(
        &self,
        w: &W,
        root: &mut PageWriteGuard,
        pending: Pending<'_>,
        unique: bool,
    ) -> Result<()> {
        let level = NodeRef::new(root, self.root)?.level();
        if level as usize + 1 >= MAX_HEIGHT {
            return Err(Error::TooLarge {
                what: "B+tree height",
                size: level as usize + 2,
                limit: MAX_HEIGHT,
            });
        }
        let flags = page::page_flags(root);
        let mut left = w.allocate_page()?;
        let left_id = left.id();
        node::copy_node(root, &mut left, left_id, 0)?;
        let (sk, sv, right) = split_node(w, &mut left, &pending, true, unique)?;
        drop(left);
        node::init_node(root, self.root, level + 1, flags);
        node::set_left(root, left_id);
        if !node::push_internal_cell(root, self.root, right, &sk, &sv)? {
            return Err(Error::corrupt(
                self.root,
                "new root cannot hold one separator",
            ));
        }
        Ok(())
    }

    /// Deletes the entry `(key, value)`; returns whether it was there. In a unique
    /// tree the value must match too (see [`BTree::remove`] to delete by key alone).
    pub fn delete<W: PageWrite + ?Sized>(&self, w: &W, key: &[u8], value: &[u8]) -> Result<bool> {
        Ok(self
            .delete_where(w, Target::At { key, val: value }, |k, v| {
                k == key && v == value
            })?
            .is_some())
    }

    /// Unique trees: deletes the entry with `key` and returns its value.
    pub fn remove<W: PageWrite + ?Sized>(&self, w: &W, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if !self.is_unique(w)? {
            return Err(Error::InvalidArgument(
                "remove by key alone needs a unique tree; use delete(key, value)".into(),
            ));
        }
        self.delete_where(w, Target::At { key, val: &[] }, |k, _| k == key)
    }

    fn delete_where<W: PageWrite + ?Sized>(
        &self,
        w: &W,
        t: Target<'_>,
        matches: impl Fn(&[u8], &[u8]) -> bool,
    ) -> Result<Option<Vec<u8>>> {
        let (path, g) = self.descend_path(w, t)?;
        let leaf = *path.leaf();
        let value = {
            let node = NodeRef::new(&g, leaf.id)?;
            if path.pos >= node.count() {
                return Ok(None);
            }
            let (k, v) = node.leaf_entry(path.pos)?;
            if !matches(k, v) {
                return Ok(None);
            }
            v.to_vec()
        };
        drop(g);
        if leaf.count > 1 || path.len == 1 {
            let mut g = w.write_page(leaf.id)?;
            node::remove_cell(&mut g, leaf.id, path.pos)?;
        } else {
            self.remove_leaf(w, &path)?;
        }
        Ok(Some(value))
    }

    /// Removes a non-root leaf whose only entry is being deleted: unlinks it from its
    /// siblings, frees it, and removes it (and any ancestor left without children)
    /// from the tree.
    fn remove_leaf<W: PageWrite + ?Sized>(&self, w: &W, path: &Path) -> Result<()> {
        let leaf_idx = path.len - 1;
        let leaf_id = path.leaf().id;
        // Ancestors with a single child disappear with the leaf; `top` keeps its others.
        let mut top = leaf_idx - 1;
        while top > 0 && path.steps[top].count == 0 {
            top -= 1;
        }
        // Latch order: ancestors top-down, then leaves left to right.
        let mut inner = Vec::with_capacity(leaf_idx - top);
        for step in &path.steps[top..leaf_idx] {
            inner.push(w.write_page(step.id)?);
        }
        let mut prev = match path.leaf_prev {
            p if p.is_none() => None,
            p => Some(w.write_page(p)?),
        };
        let leaf = w.write_page(leaf_id)?;
        let mut next = match path.leaf_next {
            n if n.is_none() => None,
            n => Some(w.write_page(n)?),
        };
        {
            let node = NodeRef::at_level(&leaf, leaf_id, 0)?;
            if node.prev() != path.leaf_prev || node.next() != path.leaf_next || node.count() != 1 {
                return Err(Error::corrupt(leaf_id, "leaf changed under a writer"));
            }
        }
        if let Some(p) = prev.as_mut() {
            let id = p.id();
            if NodeRef::at_level(p, id, 0)?.next() != leaf_id {
                return Err(Error::corrupt(
                    id,
                    format!("next link does not point to {leaf_id}"),
                ));
            }
            node::set_right(p, path.leaf_next);
        }
        if let Some(n) = next.as_mut() {
            let id = n.id();
            if NodeRef::at_level(n, id, 0)?.prev() != leaf_id {
                return Err(Error::corrupt(
                    id,
                    format!("prev link does not point to {leaf_id}"),
                ));
            }
            node::set_left(n, path.leaf_prev);
        }
        let top_step = &path.steps[top];
        let top_guard = &mut inner[0];
        if top == 0 && top_step.count == 0 {
            // The tree is empty: the root becomes an empty leaf.
            let flags = page::page_flags(top_guard);
            node::init_node(top_guard, self.root, 0, flags);
        } else {
            node::remove_child(top_guard, top_step.id, top_step.child)?;
        }
        drop((prev, leaf, next, inner));
        w.free_page(leaf_id)?;
        for step in &path.steps[top + 1..leaf_idx] {
            w.free_page(step.id)?;
        }
        Ok(())
    }

    /// Builds a tree from `entries`, which must be sorted (by key for a unique tree,
    /// by `(key, value)` otherwise) without duplicates. Leaves are filled left to right
    /// to [`FILL_PERCENT`], then each internal level is built over the one below.
    ///
    /// Errors: [`Error::InvalidArgument`] if the input is out of order,
    /// [`Error::DuplicateKey`] on a repeated key (unique) or entry (non-unique),
    /// [`Error::TooLarge`] for an oversized key or value. On error every page
    /// allocated so far is freed.
    pub fn bulk_build<W, I, K, V>(w: &W, entries: I, unique: bool) -> Result<BTree>
    where
        W: PageWrite + ?Sized,
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let mut allocated = Vec::new();
        let result = build(w, entries, unique, &mut allocated);
        if result.is_err() {
            for id in allocated {
                // The build's error is the one worth reporting.
                let _ = w.free_page(id);
            }
        }
        result
    }

    /// Frees every page of the tree, the root included.
    pub fn drop_tree<W: PageWrite + ?Sized>(self, w: &W) -> Result<()> {
        let mut stack = vec![(self.root, None::<u8>)];
        let mut children = Vec::new();
        while let Some((id, expected)) = stack.pop() {
            {
                let g = w.read_page(id)?;
                let node = match expected {
                    None => self.root_node(&g)?,
                    Some(level) => NodeRef::at_level(&g, id, level)?,
                };
                if !node.is_leaf() {
                    children.clear();
                    for i in 0..=node.count() {
                        children.push(node.child(i)?);
                    }
                    if node.level() == 1 {
                        // Leaves need no reading: free them straight away.
                        drop(g);
                        for &c in &children {
                            w.free_page(c)?;
                        }
                    } else {
                        let level = node.level() - 1;
                        stack.extend(children.iter().map(|&c| (c, Some(level))));
                    }
                }
            }
            w.free_page(id)?;
        }
        Ok(())
    }

    /// Checks every invariant listed in [`super::node`]; the first violation is
    /// reported as [`Error::CorruptPage`] naming the offending page.
    pub fn verify<R: PageRead + ?Sized>(&self, r: &R) -> Result<VerifyReport> {
        let (unique, level) = {
            let g = r.read_page(self.root)?;
            let root = self.root_node(&g)?;
            (root.is_unique(), root.level())
        };
        let mut st = VerifyState {
            root: self.root,
            unique,
            page_size: r.page_size(),
            visited: HashSet::new(),
            prev_leaf: PageId::NONE,
            prev_leaf_next: PageId::NONE,
            last: None,
            report: VerifyReport {
                unique,
                height: level as u32 + 1,
                ..VerifyReport::default()
            },
        };
        verify_node(r, &mut st, self.root, level, None, None)?;
        if !st.prev_leaf_next.is_none() {
            return Err(Error::corrupt(
                st.prev_leaf,
                format!("rightmost leaf links to next page {}", st.prev_leaf_next),
            ));
        }
        Ok(st.report)
    }
}

fn root_flags(unique: bool) -> u16 {
    FLAG_ROOT | if unique { FLAG_UNIQUE } else { 0 }
}

/// Applies `pending` in place; `Ok(false)` if the node lacks the room.
fn apply(g: &mut PageWriteGuard, pending: &Pending<'_>) -> Result<bool> {
    let id = g.id();
    match pending {
        Pending::Entry { pos, key, val } => node::insert_leaf_entry(g, id, *pos, key, val),
        Pending::Cell {
            pos,
            key,
            val,
            child,
        } => node::insert_internal_cell(g, id, *pos, *child, key, val),
    }
}

/// Splits node `g` while applying `pending`: `g` keeps the left half, a new page takes
/// the right half. Returns the separator for the parent and the new page's id.
fn split_node<W: PageWrite + ?Sized>(
    w: &W,
    g: &mut PageWriteGuard,
    pending: &Pending<'_>,
    rightmost: bool,
    unique: bool,
) -> Result<(Vec<u8>, Vec<u8>, PageId)> {
    let id = g.id();
    let ps = g.len();
    let usable = usable_space(ps);
    let old = g.to_vec();
    let node = NodeRef::new(&old, id)?;
    let flags = node.flags();
    let level = node.level();
    let n = node.count();
    let pos = match pending {
        Pending::Entry { pos, .. } | Pending::Cell { pos, .. } => *pos,
    };
    if pos > n {
        return Err(Error::corrupt(
            id,
            format!("split inserting at {pos} of {n} cells"),
        ));
    }
    match pending {
        Pending::Entry { pos, key, val } => {
            let mut cells = Vec::with_capacity(n + 1);
            for i in 0..n {
                cells.push(node.leaf_entry(i)?);
            }
            cells.insert(*pos, (*key, *val));
            let sizes: Vec<usize> = cells
                .iter()
                .map(|(k, v)| leaf_cell_size(k.len(), v.len()) + SLOT_SIZE)
                .collect();
            let old_next = node.next();
            // Appending to the rightmost leaf: leave it full, as bulk loading would.
            let target = if rightmost && *pos == n && old_next.is_none() {
                usable * FILL_PERCENT / 100
            } else {
                sizes.iter().sum::<usize>() / 2
            };
            let k = node::choose_split(&sizes, usable, target, false, id)?;
            let mut right = w.allocate_page()?;
            let right_id = right.id();
            node::init_node(&mut right, right_id, 0, 0);
            node::set_left(&mut right, id);
            node::set_right(&mut right, old_next);
            for (key, val) in &cells[k..] {
                if !node::push_leaf_entry(&mut right, right_id, key, val)? {
                    return Err(Error::corrupt(id, "split half does not fit"));
                }
            }
            node::init_node(g, id, 0, flags);
            node::set_left(g, node.prev());
            node::set_right(g, right_id);
            for (key, val) in &cells[..k] {
                if !node::push_leaf_entry(g, id, key, val)? {
                    return Err(Error::corrupt(id, "split half does not fit"));
                }
            }
            if !old_next.is_none() {
                // Left to right: the old right sibling is latched after this leaf.
                let mut ng = w.write_page(old_next)?;
                NodeRef::at_level(&ng, old_next, 0)?;
                node::set_left(&mut ng, right_id);
            }
            let (sk, sv) = node::separator(unique, cells[k - 1], cells[k]);
            Ok((sk, sv, right_id))
        }
        Pending::Cell {
            pos,
            key,
            val,
            child,
        } => {
            let mut cells = Vec::with_capacity(n + 1);
            for i in 0..n {
                cells.push(node.internal_cell(i)?);
            }
            cells.insert(*pos, (*child, &key[..], &val[..]));
            let sizes: Vec<usize> = cells
                .iter()
                .map(|(_, k, v)| internal_cell_size(k.len(), v.len()) + SLOT_SIZE)
                .collect();
            let target = if rightmost && *pos == n {
                usable * FILL_PERCENT / 100
            } else {
                sizes.iter().sum::<usize>() / 2
            };
            let k = node::choose_split(&sizes, usable, target, true, id)?;
            let (mid_child, mid_key, mid_val) = cells[k];
            let mut right = w.allocate_page()?;
            let right_id = right.id();
            node::init_node(&mut right, right_id, level, 0);
            node::set_left(&mut right, mid_child);
            for (c, key, val) in &cells[k + 1..] {
                if !node::push_internal_cell(&mut right, right_id, *c, key, val)? {
                    return Err(Error::corrupt(id, "split half does not fit"));
                }
            }
            let leftmost = node.left();
            node::init_node(g, id, level, flags);
            node::set_left(g, leftmost);
            for (c, key, val) in &cells[..k] {
                if !node::push_internal_cell(g, id, *c, key, val)? {
                    return Err(Error::corrupt(id, "split half does not fit"));
                }
            }
            Ok((mid_key.to_vec(), mid_val.to_vec(), right_id))
        }
    }
}

/// Used bytes of a node being filled.
fn used(g: &PageWriteGuard) -> Result<usize> {
    let node = NodeRef::new(g, g.id())?;
    Ok(usable_space(g.len()) - node.free_space())
}

/// The body of [`BTree::bulk_build`]; records every page it allocates in `allocated`.
fn build<W, I, K, V>(w: &W, entries: I, unique: bool, allocated: &mut Vec<PageId>) -> Result<BTree>
where
    W: PageWrite + ?Sized,
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    let ps = w.page_size();
    let fill = usable_space(ps) * FILL_PERCENT / 100;
    let tree = BTree::create(w, unique)?;
    allocated.push(tree.root);

    // Level 0: leaves, left to right. `level` lists each node's page and the separator
    // bounding it from below (empty for the first node).
    let mut level: Vec<(Vec<u8>, Vec<u8>, PageId)> = Vec::new();
    let mut cur: Option<PageWriteGuard> = None;
    let (mut last_key, mut last_val) = (Vec::new(), Vec::new());
    for (key, val) in entries {
        let (key, val) = (key.as_ref(), val.as_ref());
        check_entry(ps, key, val)?;
        if cur.is_some() {
            match cmp_entries(unique, (&last_key[..], &last_val[..]), (key, val)) {
                Ordering::Less => {}
                Ordering::Equal => return Err(Error::DuplicateKey),
                Ordering::Greater => {
                    return Err(Error::InvalidArgument(
                        "bulk_build input is not in ascending order".into(),
                    ));
                }
            }
        }
        let size = leaf_cell_size(key.len(), val.len()) + SLOT_SIZE;
        let start_new = match &cur {
            None => true,
            Some(g) => used(g)? + size > fill,
        };
        if start_new {
            let mut g = w.allocate_page()?;
            let id = g.id();
            allocated.push(id);
            node::init_node(&mut g, id, 0, 0);
            match cur.take() {
                Some(mut prev) => {
                    node::set_right(&mut prev, id);
                    node::set_left(&mut g, prev.id());
                    let (sk, sv) =
                        node::separator(unique, (&last_key[..], &last_val[..]), (key, val));
                    level.push((sk, sv, id));
                }
                None => level.push((Vec::new(), Vec::new(), id)),
            }
            cur = Some(g);
        }
        if let Some(g) = cur.as_mut() {
            let id = g.id();
            if !node::push_leaf_entry(g, id, key, val)? {
                return Err(Error::corrupt(id, "entry does not fit an empty leaf"));
            }
        }
        last_key.clear();
        last_key.extend_from_slice(key);
        last_val.clear();
        last_val.extend_from_slice(val);
    }
    drop(cur);

    // Internal levels, until one node remains.
    let mut height = 1;
    while level.len() > 1 {
        if height >= MAX_HEIGHT {
            return Err(Error::TooLarge {
                what: "B+tree height",
                size: height + 1,
                limit: MAX_HEIGHT,
            });
        }
        let mut upper = Vec::new();
        let mut cur: Option<PageWriteGuard> = None;
        for (sk, sv, child) in level {
            if let Some(g) = cur.as_mut()
                && used(g)? + internal_cell_size(sk.len(), sv.len()) + SLOT_SIZE <= fill
            {
                let id = g.id();
                if !node::push_internal_cell(g, id, child, &sk, &sv)? {
                    return Err(Error::corrupt(id, "separator does not fit"));
                }
                continue;
            }
            let mut g = w.allocate_page()?;
            let id = g.id();
            allocated.push(id);
            node::init_node(&mut g, id, height as u8, 0);
            node::set_left(&mut g, child);
            upper.push((sk, sv, id));
            cur = Some(g);
        }
        level = upper;
        height += 1;
    }

    // The single top node moves into the root page, whose id must not change.
    if let Some(&(_, _, top)) = level.first() {
        let body = w.read_page(top)?.to_vec();
        let mut root = w.write_page(tree.root)?;
        node::copy_node(&body, &mut root, tree.root, root_flags(unique))?;
        drop(root);
        w.free_page(top)?;
        allocated.retain(|&id| id != top);
    }
    Ok(tree)
}

struct VerifyState {
    root: PageId,
    unique: bool,
    page_size: usize,
    visited: HashSet<PageId>,
    /// The last leaf seen (in key order) and its next link.
    prev_leaf: PageId,
    prev_leaf_next: PageId,
    /// The last entry seen.
    last: Option<(Vec<u8>, Vec<u8>)>,
    report: VerifyReport,
}

type Point<'a> = Option<(&'a [u8], &'a [u8])>;

/// Checks the node format: slots, cell bounds, overlap and space accounting (inv. 2).
fn verify_layout(node: &NodeRef<'_>) -> Result<()> {
    let id = node.id();
    let content = node.content_start();
    let ps = node.bytes().len();
    let mut cells = Vec::with_capacity(node.count());
    for i in 0..node.count() {
        let off = node.slot(i);
        if off < content {
            return Err(Error::corrupt(
                id,
                format!("cell {i} at {off} lies below the content start {content}"),
            ));
        }
        cells.push((off, node.cell_size(i)?));
    }
    cells.sort_unstable();
    let mut end = content;
    let mut total = 0;
    for &(off, size) in &cells {
        if off < end {
            return Err(Error::corrupt(
                id,
                format!("cell at {off} overlaps another cell"),
            ));
        }
        end = off + size;
        total += size;
    }
    if total + node.garbage() != ps - content {
        return Err(Error::corrupt(
            id,
            format!(
                "cells ({total} bytes) and garbage ({}) do not fill the content area ({} bytes)",
                node.garbage(),
                ps - content
            ),
        ));
    }
    if !node.is_leaf() && !node.right().is_none() {
        return Err(Error::corrupt(id, "internal node has a right link"));
    }
    Ok(())
}

/// Checks that `e` lies in `[lower, upper)` (inv. 5) and follows `prev` (inv. 4).
fn verify_point(
    st: &VerifyState,
    id: PageId,
    what: &str,
    i: usize,
    e: (&[u8], &[u8]),
    prev: Point<'_>,
    (lower, upper): (Point<'_>, Point<'_>),
) -> Result<()> {
    let u = st.unique;
    if e.0.len() > max_key_len(st.page_size) || e.1.len() > MAX_VALUE_LEN {
        return Err(Error::corrupt(
            id,
            format!(
                "{what} {i} is too long ({} + {} bytes)",
                e.0.len(),
                e.1.len()
            ),
        ));
    }
    if let Some(p) = prev
        && cmp_entries(u, p, e) != Ordering::Less
    {
        return Err(Error::corrupt(
            id,
            format!("{what} {i} is not above {what} {}", i - 1),
        ));
    }
    if let Some(l) = lower
        && cmp_entries(u, l, e) == Ordering::Greater
    {
        return Err(Error::corrupt(
            id,
            format!("{what} {i} is below the subtree's lower bound"),
        ));
    }
    if let Some(h) = upper
        && cmp_entries(u, e, h) != Ordering::Less
    {
        return Err(Error::corrupt(
            id,
            format!("{what} {i} is not below the subtree's upper bound"),
        ));
    }
    Ok(())
}

fn verify_node<R: PageRead + ?Sized>(
    r: &R,
    st: &mut VerifyState,
    id: PageId,
    level: u8,
    lower: Point<'_>,
    upper: Point<'_>,
) -> Result<()> {
    // Inv. 10: each page once.
    if !st.visited.insert(id) {
        return Err(Error::corrupt(id, "page is reached twice from the root"));
    }
    let g = r.read_page(id)?;
    // Inv. 1 and 6: kind matches level, level is the parent's minus one.
    let node = NodeRef::at_level(&g, id, level)?;
    let is_root = id == st.root;
    let flags = node.flags();
    if is_root {
        let expected = root_flags(st.unique);
        if flags != expected {
            return Err(Error::corrupt(
                id,
                format!("root flags {flags:#x}, expected {expected:#x}"),
            ));
        }
    } else if flags != 0 {
        return Err(Error::corrupt(
            id,
            format!("non-root node has flags {flags:#x}"),
        ));
    }
    verify_layout(&node)?;
    let n = node.count();
    if node.is_leaf() {
        st.report.leaf_pages += 1;
        // Inv. 9.
        if n == 0 && !is_root {
            return Err(Error::corrupt(id, "non-root leaf is empty"));
        }
        // Inv. 3, 4, 5.
        let mut prev = None;
        for i in 0..n {
            let e = node.leaf_entry(i)?;
            verify_point(st, id, "entry", i, e, prev, (lower, upper))?;
            prev = Some(e);
        }
        // Inv. 7: sibling links agree with the key order.
        if node.prev() != st.prev_leaf {
            return Err(Error::corrupt(
                id,
                format!(
                    "prev link is {} but the leaf before it is {}",
                    node.prev(),
                    st.prev_leaf
                ),
            ));
        }
        if !st.prev_leaf.is_none() && st.prev_leaf_next != id {
            return Err(Error::corrupt(
                st.prev_leaf,
                format!(
                    "next link is {} but the leaf after it is {id}",
                    st.prev_leaf_next
                ),
            ));
        }
        // Inv. 8: order across leaves.
        if n > 0 {
            let first = node.leaf_entry(0)?;
            if let Some((lk, lv)) = &st.last
                && cmp_entries(st.unique, (lk, lv), first) != Ordering::Less
            {
                return Err(Error::corrupt(
                    id,
                    "first entry is not above the previous leaf's last",
                ));
            }
            let (k, v) = node.leaf_entry(n - 1)?;
            st.last = Some((k.to_vec(), v.to_vec()));
        }
        st.prev_leaf = id;
        st.prev_leaf_next = node.next();
        st.report.entries += n as u64;
        return Ok(());
    }
    st.report.internal_pages += 1;
    let mut prev = None;
    for i in 0..n {
        let s = node.separator(i)?;
        if st.unique && !s.1.is_empty() {
            return Err(Error::corrupt(
                id,
                format!("separator {i} of a unique tree has a value part"),
            ));
        }
        verify_point(st, id, "separator", i, s, prev, (lower, upper))?;
        prev = Some(s);
    }
    for i in 0..=n {
        let child = node.child(i)?;
        let lo = if i == 0 {
            lower
        } else {
            Some(node.separator(i - 1)?)
        };
        let hi = if i == n {
            upper
        } else {
            Some(node.separator(i)?)
        };
        verify_node(r, st, child, level - 1, lo, hi)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
