//! Table scans: every page of the heap, or the rows an index range names.

use std::ops::Bound;

use beedb_storage::btree::key_encoding::prefix_successor;
use beedb_storage::PageRead;
use beedb_storage::btree::{BTree, Cursor, Direction};
use beedb_storage::heap::{HeapFile, HeapPage};
use beedb_storage::{PageId, SlotId, TupleId};

use beedb_bees::abi::{ByteRef, ColumnOut, Stop};

use super::tuple_codec::{KeyMiss, OwnedKey, RowDecoder, index_prefix, key_of};
use super::{Exec, Flow, Out, tid_vector};
use crate::bees::output::BeeOutput;
use crate::bees::{ScanBeePlan, ScanBees};
use crate::catalog::TableDef;
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::plan::Access;
use crate::vector::{BATCH_SIZE, Vector};

/// A tuple id as the bigint a `with_tid` scan reports: `(page << 16) | slot`.
pub fn tid_to_i64(t: TupleId) -> i64 {
    ((t.page.0 as i64) << 16) | t.slot.0 as i64
}

/// The tuple id of a `with_tid` bigint.
pub fn i64_to_tid(v: i64) -> TupleId {
    TupleId {
        page: PageId((v >> 16) as u32),
        slot: SlotId((v & 0xFFFF) as u16),
    }
}

/// The bee side of a scan: which bee decodes, and its output buffers.
struct BeeScan<'p> {
    plan: &'p ScanBeePlan,
    output: BeeOutput,
    sel: Vec<u32>,
    refs: Vec<ByteRef>,
    /// Table columns → scan output position (deform bees write by attribute).
    attr_out: Vec<Option<usize>>,
    /// Tuples handed to the bee, for the relation's size statistics.
    tuples: u64,
}

impl BeeScan<'_> {
    /// The bee's column buffers: per output column (scan bee) or per attribute
    /// (deform bee, skipping the attributes the scan does not read).
    fn outs(&mut self, cols: &mut [Vector]) -> Vec<ColumnOut> {
        let outs = self.output.column_outs(cols);
        if self.plan.scan.is_some() {
            return outs;
        }
        self.attr_out
            .iter()
            .map(|o| o.map_or(ColumnOut::SKIP, |k| outs[k]))
            .collect()
    }
}

/// Accumulates decoded rows and pushes full batches.
struct Builder<'e, 'a> {
    ex: &'e Exec<'a>,
    decoder: RowDecoder,
    /// Rows a batch holds now: a whole [`BATCH_SIZE`] for heap scans; an index scan
    /// starts with what it expects (one row for a unique key) and grows, so a point
    /// lookup does not allocate and free buffers for a thousand rows.
    cap: usize,
    cols: Vec<Vector>,
    tids: Vec<TupleId>,
    filter: Option<&'e Expr>,
    with_tid: bool,
    bee: Option<BeeScan<'e>>,
}

impl Builder<'_, '_> {
    fn add(&mut self, table: &TableDef, tid: TupleId, tuple: &[u8]) -> Result<()> {
        self.decoder
            .decode_into(self.ex.ctx.reader, table, tuple, &mut self.cols)?;
        self.tids.push(tid);
        Ok(())
    }

    /// Decodes a run of tuples (`items` index `buf`), through the bee if there is one.
    /// Never pushes a batch: the caller may hold a page latch over `buf`, and no
    /// consumer may run under it. The batch grows past `cap` if the run does not fit;
    /// the caller flushes once the latch is released ([`Self::full`]).
    fn add_run(&mut self, table: &TableDef, items: &[(TupleId, usize, usize)], buf: &[u8]) -> Result<()> {
        let Some(mut bee) = self.bee.take() else {
            self.decoder.decode_run(self.ex.ctx.reader, table, items, buf, &mut self.cols)?;
            self.tids.extend(items.iter().map(|&(tid, _, _)| tid));
            return Ok(());
        };
        let r = self.bee_run(&mut bee, table, items, buf);
        self.bee = Some(bee);
        r
    }

    /// Pushes the batch now if `incoming` more rows would not fit in it.
    fn make_room(&mut self, incoming: usize, out: Out) -> Result<Flow> {
        if self.tids.len() + incoming > self.cap {
            return self.flush(out);
        }
        Ok(Flow::Continue)
    }

    fn bee_run(
        &mut self,
        bee: &mut BeeScan<'_>,
        table: &TableDef,
        items: &[(TupleId, usize, usize)],
        buf: &[u8],
    ) -> Result<()> {
        bee.refs.clear();
        bee.refs
            .extend(items.iter().map(|&(_, s, e)| ByteRef::of(&buf[s..e])));
        bee.tuples += items.len() as u64;
        let routine = match &bee.plan.scan {
            Some(s) => &**s,
            None => &*bee.plan.relation.deform,
        };
        // Room for the whole run: batches may have grown since the bee's buffers were
        // made, and a run is never split (see `add_run`).
        let need = (self.tids.len() + items.len()).max(self.cap);
        if bee.sel.len() < need {
            bee.output.grow(need);
            bee.sel.resize(need, 0);
        }
        let mut start = 0;
        while start < items.len() {
            let row0 = self.tids.len();
            let cap = need - row0;
            let outs = bee.outs(&mut self.cols);
            let refs = &bee.refs[start..];
            // SAFETY: `refs` point into `buf`, alive for this call; `outs` come from
            // `column_outs` for `self.cols`, with room for `need` rows (the output's
            // capacity was grown to it above); `sel` holds `need` entries.
            let prog = unsafe {
                routine.run(refs, &outs, row0, cap, &mut bee.sel, bee.plan.var_limit)
            };
            // SAFETY: the bee wrote these rows; `buf` is still alive.
            unsafe { bee.output.commit(&mut self.cols, row0, prog.produced)? };
            for &i in &bee.sel[..prog.produced] {
                self.tids.push(items[start + i as usize].0);
            }
            start += prog.consumed;
            if prog.stop == Stop::Fallback {
                let (tid, s, e) = items[start];
                self.fallback(bee, table, tid, &buf[s..e])?;
                start += 1;
            }
        }
        Ok(())
    }

    /// A tuple the bee handed back: the generic decoder, and the pushed conjuncts
    /// through the generic evaluator.
    fn fallback(&mut self, bee: &BeeScan<'_>, table: &TableDef, tid: TupleId, tuple: &[u8]) -> Result<()> {
        let Some(pushed) = &bee.plan.pushed else {
            return self.add(table, tid, tuple);
        };
        let mut one = self.decoder.new_vectors(1);
        self.decoder
            .decode_into(self.ex.ctx.reader, table, tuple, &mut one)?;
        let b = super::make_batch(one, 1);
        if self.ex.pred(pushed, &b)?.is_empty() {
            return Ok(());
        }
        for (dst, src) in self.cols.iter_mut().zip(&b.columns) {
            dst.push_from(src, 0);
        }
        self.tids.push(tid);
        Ok(())
    }

    fn full(&self) -> bool {
        self.tids.len() >= self.cap
    }

    /// Pushes the rows gathered so far and starts the next batch, four times larger
    /// (up to [`BATCH_SIZE`]) when this one was full: the scan proved longer than
    /// expected.
    fn flush(&mut self, out: Out) -> Result<Flow> {
        if self.tids.is_empty() {
            return Ok(Flow::Continue);
        }
        if self.full() && self.cap < BATCH_SIZE {
            self.cap = (self.cap * 4).min(BATCH_SIZE);
        }
        let cols = std::mem::replace(&mut self.cols, self.decoder.new_vectors(self.cap));
        self.push(cols, out)
    }

    /// Pushes the last rows, without making buffers for another batch.
    fn finish(mut self, out: Out) -> Result<Flow> {
        if self.tids.is_empty() {
            return Ok(Flow::Continue);
        }
        let cols = std::mem::take(&mut self.cols);
        self.push(cols, out)
    }

    fn push(&mut self, mut cols: Vec<Vector>, out: Out) -> Result<Flow> {
        let n = self.tids.len();
        if self.with_tid {
            cols.push(tid_vector(&self.tids));
        }
        self.tids.clear();
        let mut b = super::make_batch(cols, n);
        if let Some(f) = self.filter {
            let sel = self.ex.pred(f, &b)?;
            if sel.is_empty() {
                return Ok(Flow::Continue);
            }
            if sel.len() < n {
                b.sel = Some(sel);
            }
        }
        out(b)
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn table_scan(
    ex: &Exec<'_>,
    id: usize,
    table: &TableDef,
    columns: &[usize],
    filter: Option<&Expr>,
    access: &Access,
    with_tid: bool,
    bees: Option<&ScanBees>,
    wanted: Option<usize>,
    out: Out,
) -> Result<Flow> {
    let decoder = RowDecoder::new(table, columns);
    let cap = first_batch_rows(table, access, wanted);
    let bee = bees.map(|b| {
        let types: Vec<_> = columns
            .iter()
            .map(|&c| (table.columns[c].ty, table.layout.column(c).nullable()))
            .collect();
        let mut attr_out = vec![None; table.columns.len()];
        for (k, &c) in columns.iter().enumerate() {
            attr_out[c] = Some(k);
        }
        BeeScan {
            plan: &b.0,
            output: BeeOutput::new(&types, cap),
            sel: vec![0; cap],
            refs: Vec::new(),
            attr_out,
            tuples: 0,
        }
    });
    // With a bee, the filter's pushed conjuncts are the bee's; the rest is residual.
    let filter = match bees {
        Some(b) => b.0.residual.as_ref(),
        None => filter,
    };
    let mut b = Builder {
        ex,
        cap,
        cols: decoder.new_vectors(cap),
        decoder,
        tids: Vec::with_capacity(cap),
        filter,
        with_tid,
        bee,
    };
    let r = ex.ctx.reader;
    let heap = HeapFile::open(table.heap);
    let mut items: Vec<(TupleId, usize, usize)> = Vec::new();
    match access {
        Access::Heap => {
            // A worker of a parallel pipeline scans the pages the dispenser hands it.
            let morsels = ex.morsels_for(id);
            let mut own = heap.pages(r);
            // The bee (or decoder) reads each page's tuples in place, under the page's
            // share latch, and the batch is pushed only after the latch is released:
            // no consumer runs under a latch (it may write this very page). So the
            // batch is pushed early when the next page might not fit; a page with more
            // tuples than any before it may still overfill it a little.
            let mut most_on_a_page = 0;
            // Tuples whose join key the build above does not hold are dropped before
            // they are decoded (`key_filter`), until the test stops paying.
            let mut key_test = super::key_filter::ScanKeyTest::for_scan(ex, id, table);
            let mut key_filtered = 0u64;
            loop {
                if b.make_room(most_on_a_page, out)? == Flow::Stop {
                    return Ok(Flow::Stop);
                }
                let g = match morsels {
                    Some(m) => m.next(),
                    None => own.next().map(|g| g.map_err(Error::from)),
                };
                let Some(g) = g else { break };
                {
                    let g = g?;
                    let page = g.id();
                    items.clear();
                    HeapPage::new(&g, page)?.for_each_tuple_range(|slot, off, len| {
                        items.push((TupleId { page, slot }, off, off + len));
                    })?;
                    most_on_a_page = most_on_a_page.max(items.len());
                    if let Some(t) = &mut key_test {
                        let before = items.len();
                        if !t.retain(table, &mut items, &g) {
                            key_test = None;
                        }
                        // The relation's size counts the tuples dropped here too.
                        if let Some(bee) = &mut b.bee {
                            bee.tuples += (before - items.len()) as u64;
                        }
                        key_filtered += (before - items.len()) as u64;
                    }
                    b.add_run(table, &items, &g)?;
                }
                if b.full() && b.flush(out)? == Flow::Stop {
                    return Ok(Flow::Stop);
                }
            }
            if key_filtered > 0
                && let Some(p) = ex.profile
            {
                p.record_key_filtered(id, key_filtered);
            }
            if let Some(bee) = &b.bee {
                match morsels {
                    Some(m) => m.add_tuples(bee.tuples),
                    // Here the scan ran to its end (an early stop returned above):
                    // an empty relation is known to be (nearly) empty.
                    None => bee.plan.cache.note_relation_size(table.id as u64, bee.tuples.max(1)),
                }
            }
        }
        Access::Index {
            index,
            eq,
            lower,
            upper,
            skip_nulls,
            backward,
            any,
        } => {
            let ranges = if any.is_empty() {
                let bounds = (lower.as_ref(), upper.as_ref(), *skip_nulls);
                match index_range(ex, table, *index, eq, bounds, *backward)? {
                    Some(range) => vec![range],
                    None => return Ok(Flow::Continue),
                }
            } else {
                in_list_ranges(ex, table, *index, eq, any, *backward)?
            };
            // The index is read in runs: each run's tuple ids are copied out and the
            // cursor (with the leaf guard it holds) dropped before the heap is read
            // and the rows pushed, so no latch is held while consumers run; the next
            // run resumes after the last entry read. A consumer that wants only a few
            // rows (a Limit: `wanted`) gets them from a first run that small, pushed
            // at once; runs then double up to a batch.
            let mut tids: Vec<TupleId> = Vec::new();
            let mut one = Vec::new();
            let mut buf: Vec<u8> = Vec::new();
            for range in &ranges {
                let mut run = wanted.map_or(64, |w| w.clamp(1, BATCH_SIZE));
                let mut last: Option<(Vec<u8>, Vec<u8>)> = None;
                loop {
                    tids.clear();
                    let mut cursor = match &last {
                        None => range.open(r)?,
                        Some((k, v)) => range.resume(r, k, v)?,
                    };
                    let mut more = false;
                    while let Some((k, v)) = cursor.next_entry()? {
                        let tid = TupleId::from_bytes(v).ok_or_else(|| Error::internal("malformed index value"))?;
                        tids.push(tid);
                        if tids.len() == run {
                            last = Some((k.to_vec(), v.to_vec()));
                            more = true;
                            break;
                        }
                    }
                    drop(cursor);
                    // Runs of fetched tuples (copied out of their pages), so a bee is
                    // called on many at once.
                    for chunk in tids.chunks(64) {
                        if b.make_room(chunk.len(), out)? == Flow::Stop {
                            return Ok(Flow::Stop);
                        }
                        buf.clear();
                        items.clear();
                        for &tid in chunk {
                            if !heap.get_into(r, tid, &mut one)? {
                                return Err(Error::internal(format!(
                                    "index of \"{}\" names tuple {tid}, which does not exist",
                                    table.name
                                )));
                            }
                            // Tuples start 8-aligned, as in a page.
                            buf.resize(buf.len().next_multiple_of(8), 0);
                            let s = buf.len();
                            buf.extend_from_slice(&one);
                            items.push((tid, s, buf.len()));
                        }
                        b.add_run(table, &items, &buf)?;
                        if b.full() && b.flush(out)? == Flow::Stop {
                            return Ok(Flow::Stop);
                        }
                    }
                    if !more {
                        break;
                    }
                    if wanted.is_some() && b.flush(out)? == Flow::Stop {
                        return Ok(Flow::Stop);
                    }
                    run = (run * 2).min(BATCH_SIZE);
                }
            }
        }
    }
    b.finish(out)
}

/// Rows the first batch of a scan holds: a whole batch for a heap scan; for an index
/// scan, one when the key names at most one row (every column of a unique index
/// bound by equality), else what a LIMIT above wants, else 64 (the first index run).
fn first_batch_rows(table: &TableDef, access: &Access, wanted: Option<usize>) -> usize {
    match access {
        Access::Heap => BATCH_SIZE,
        Access::Index { .. } if super::point::is_unique_lookup(table, access) => 1,
        Access::Index { .. } => wanted.map_or(64, |w| w.clamp(1, BATCH_SIZE)),
    }
}

/// The ranges an index scan with `column IN (any…)` after its equalities `eq` reads:
/// one per distinct non-NULL value that a stored key can equal, in key order
/// (descending when `backward`), so every row is read once and in index order.
fn in_list_ranges(
    ex: &Exec<'_>,
    table: &TableDef,
    index: usize,
    eq: &[Expr],
    any: &[Expr],
    backward: bool,
) -> Result<Vec<IndexRange>> {
    let mut ranges = Vec::with_capacity(any.len());
    let mut keys = eq.to_vec();
    for e in any {
        let v = ex.eval_const(e)?;
        if v.is_null() {
            continue;
        }
        keys.push(Expr::literal(v, e.ty));
        if let Some(r) = index_range(ex, table, index, &keys, (None, None, false), backward)? {
            ranges.push(r);
        }
        keys.pop();
    }
    let start = |r: &IndexRange| match &r.lo {
        Bound::Included(k) | Bound::Excluded(k) => k.clone(),
        Bound::Unbounded => Vec::new(),
    };
    ranges.sort_by_key(start);
    ranges.dedup_by(|a, b| start(a) == start(b));
    if backward {
        ranges.reverse();
    }
    Ok(ranges)
}

/// The part of an index a scan reads: encoded key bounds and the direction.
pub(super) struct IndexRange {
    tree: BTree,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    dir: Direction,
}

impl IndexRange {
    pub(super) fn open<'r, R: PageRead + ?Sized>(&self, r: &'r R) -> Result<Cursor<'r, R>> {
        Ok(self.tree.range(r, self.lo.as_ref().map(Vec::as_slice), self.hi.as_ref().map(Vec::as_slice), self.dir)?)
    }

    /// A cursor that goes on after entry `(key, val)`, which an earlier run read last.
    fn resume<'r, R: PageRead + ?Sized>(&self, r: &'r R, key: &[u8], val: &[u8]) -> Result<Cursor<'r, R>> {
        let stop = match self.dir {
            Direction::Forward => &self.hi,
            Direction::Backward => &self.lo,
        };
        Ok(self.tree.range_after(r, key, val, stop.as_ref().map(Vec::as_slice), self.dir)?)
    }
}

/// The range of index `index` of `table` whose keys equal `eq` on the leading
/// columns and lie within `lower`/`upper` on the next one (not NULL there with
/// `skip_nulls`); `None` when no stored key
/// can qualify (a NULL or out-of-range bound, an empty range).
pub(super) fn index_range(
    ex: &Exec<'_>,
    table: &TableDef,
    index: usize,
    eq: &[Expr],
    (lower, upper, skip_nulls): (Option<&(Expr, bool)>, Option<&(Expr, bool)>, bool),
    backward: bool,
) -> Result<Option<IndexRange>> {
    let idx = table
        .indexes
        .get(index)
        .ok_or_else(|| Error::internal(format!("no index {index} on \"{}\"", table.name)))?;
    if eq.len() + usize::from(lower.is_some() || upper.is_some()) > idx.columns.len() {
        return Err(Error::internal(
            "index scan bounds exceed the index columns",
        ));
    }
    let mut keys = Vec::with_capacity(eq.len() + 1);
    for (k, e) in eq.iter().enumerate() {
        let v = ex.eval_const(e)?;
        if v.is_null() {
            return Ok(None);
        }
        match key_of(&v, &table.columns[idx.columns[k]].ty, None)? {
            Ok(key) => keys.push(key),
            Err(_) => return Ok(None), // no stored key can equal it
        }
    }
    let prefix = index_prefix(table, idx, &keys)?;
    let next_ty = idx.columns.get(eq.len()).map(|&c| table.columns[c].ty);
    // Lower bound.
    let mut lo: Bound<Vec<u8>> = if prefix.is_empty() {
        Bound::Unbounded
    } else {
        Bound::Included(prefix.clone())
    };
    let mut hi: Bound<Vec<u8>> = match prefix_successor(&prefix) {
        Some(s) if !prefix.is_empty() => Bound::Excluded(s),
        _ => Bound::Unbounded,
    };
    let bounded_next = lower.is_some() || upper.is_some() || skip_nulls;
    if bounded_next {
        // NULLs sort last: keep them out of any range on the next column.
        let mut with_null = keys.clone();
        with_null.push(OwnedKey::Null);
        hi = Bound::Excluded(index_prefix(table, idx, &with_null)?);
    }
    let ty = next_ty.unwrap_or(crate::types::DataType::Integer);
    if let Some((e, inclusive)) = lower {
        let v = ex.eval_const(e)?;
        if v.is_null() {
            return Ok(None);
        }
        let mut inclusive = *inclusive;
        let key = match key_of(&v, &ty, Some(true))? {
            Ok(k) => {
                if let (OwnedKey::Dec(_), crate::types::Value::Decimal(_)) = (&k, &v) {
                    // Rounded up onto the key scale: the rounded key itself qualifies
                    // unless it equals the bound exactly.
                    if key_of(&v, &ty, None)?.is_err() {
                        inclusive = true;
                    }
                }
                k
            }
            Err(KeyMiss::TooLarge) => return Ok(None),
            Err(_) => OwnedKey::Null, // below every key: no bound beyond the prefix
        };
        if key != OwnedKey::Null {
            let mut ks = keys.clone();
            ks.push(key);
            let enc = index_prefix(table, idx, &ks)?;
            lo = if inclusive {
                Bound::Included(enc)
            } else {
                match prefix_successor(&enc) {
                    Some(s) => Bound::Included(s),
                    None => return Ok(None),
                }
            };
        } else if prefix.is_empty() {
            lo = Bound::Unbounded;
        }
    }
    if let Some((e, inclusive)) = upper {
        let v = ex.eval_const(e)?;
        if v.is_null() {
            return Ok(None);
        }
        let mut inclusive = *inclusive;
        let key = match key_of(&v, &ty, Some(false))? {
            Ok(k) => {
                if let (OwnedKey::Dec(_), crate::types::Value::Decimal(_)) = (&k, &v)
                    && key_of(&v, &ty, None)?.is_err()
                {
                    inclusive = true;
                }
                Some(k)
            }
            Err(KeyMiss::TooSmall) => return Ok(None),
            Err(_) => None, // above every key: NULL exclusion bound stays
        };
        if let Some(key) = key {
            let mut ks = keys.clone();
            ks.push(key);
            let enc = index_prefix(table, idx, &ks)?;
            hi = if inclusive {
                match prefix_successor(&enc) {
                    Some(s) => Bound::Excluded(s),
                    None => Bound::Unbounded,
                }
            } else {
                Bound::Excluded(enc)
            };
        }
    }
    if let (Bound::Included(l), Bound::Excluded(h)) = (&lo, &hi)
        && l >= h
    {
        return Ok(None);
    }
    let dir = if backward { Direction::Backward } else { Direction::Forward };
    Ok(Some(IndexRange { tree: BTree::open(idx.root), lo, hi, dir }))
}
