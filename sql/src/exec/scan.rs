//! Table scans: every page of the heap, or the rows an index range names.

use std::ops::Bound;

use beedb_storage::btree::key_encoding::prefix_successor;
use beedb_storage::btree::{BTree, Direction};
use beedb_storage::heap::{HeapFile, HeapPage};
use beedb_storage::{PageId, SlotId, TupleId};

use super::tuple_codec::{KeyMiss, OwnedKey, RowDecoder, index_prefix, key_of};
use super::{Exec, Flow, Out, tid_vector};
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

/// Accumulates decoded rows and pushes full batches.
struct Builder<'e, 'a> {
    ex: &'e Exec<'a>,
    decoder: RowDecoder,
    cols: Vec<Vector>,
    tids: Vec<TupleId>,
    filter: Option<&'e Expr>,
    with_tid: bool,
}

impl Builder<'_, '_> {
    fn add(&mut self, table: &TableDef, tid: TupleId, tuple: &[u8]) -> Result<()> {
        self.decoder
            .decode_into(self.ex.ctx.reader, table, tuple, &mut self.cols)?;
        self.tids.push(tid);
        Ok(())
    }

    fn full(&self) -> bool {
        self.tids.len() >= BATCH_SIZE
    }

    fn flush(&mut self, out: Out) -> Result<Flow> {
        let n = self.tids.len();
        if n == 0 {
            return Ok(Flow::Continue);
        }
        let mut cols = std::mem::replace(&mut self.cols, self.decoder.new_vectors(BATCH_SIZE));
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

pub(super) fn table_scan(
    ex: &Exec<'_>,
    table: &TableDef,
    columns: &[usize],
    filter: Option<&Expr>,
    access: &Access,
    with_tid: bool,
    out: Out,
) -> Result<Flow> {
    let decoder = RowDecoder::new(table, columns);
    let mut b = Builder {
        ex,
        cols: decoder.new_vectors(BATCH_SIZE),
        decoder,
        tids: Vec::with_capacity(BATCH_SIZE),
        filter,
        with_tid,
    };
    let r = ex.ctx.reader;
    let heap = HeapFile::open(table.heap);
    match access {
        Access::Heap => {
            // Copy each page's tuples out so no latch is held while consumers run.
            let mut buf: Vec<u8> = Vec::new();
            let mut slots: Vec<(SlotId, usize, usize)> = Vec::new();
            for g in heap.pages(r) {
                buf.clear();
                slots.clear();
                let page = {
                    let g = g?;
                    let page = g.id();
                    for (slot, t) in HeapPage::new(&g, page)?.tuples()? {
                        let s = buf.len();
                        buf.extend_from_slice(t);
                        slots.push((slot, s, buf.len()));
                    }
                    page
                };
                for &(slot, s, e) in &slots {
                    b.add(table, TupleId { page, slot }, &buf[s..e])?;
                    if b.full() && b.flush(out)? == Flow::Stop {
                        return Ok(Flow::Stop);
                    }
                }
            }
        }
        Access::Index {
            index,
            eq,
            lower,
            upper,
        } => {
            let tids = index_tids(ex, table, *index, eq, lower.as_ref(), upper.as_ref())?;
            let mut buf = Vec::new();
            for tid in tids {
                if !heap.get_into(r, tid, &mut buf)? {
                    return Err(Error::internal(format!(
                        "index of \"{}\" names tuple {tid}, which does not exist",
                        table.name
                    )));
                }
                b.add(table, tid, &buf)?;
                if b.full() && b.flush(out)? == Flow::Stop {
                    return Ok(Flow::Stop);
                }
            }
        }
    }
    b.flush(out)
}

/// The tuple ids an index range names, in key order.
fn index_tids(
    ex: &Exec<'_>,
    table: &TableDef,
    index: usize,
    eq: &[Expr],
    lower: Option<&(Expr, bool)>,
    upper: Option<&(Expr, bool)>,
) -> Result<Vec<TupleId>> {
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
            return Ok(Vec::new());
        }
        match key_of(&v, &table.columns[idx.columns[k]].ty, None)? {
            Ok(key) => keys.push(key),
            Err(_) => return Ok(Vec::new()), // no stored key can equal it
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
    let bounded_next = lower.is_some() || upper.is_some();
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
            return Ok(Vec::new());
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
            Err(KeyMiss::TooLarge) => return Ok(Vec::new()),
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
                    None => return Ok(Vec::new()),
                }
            };
        } else if prefix.is_empty() {
            lo = Bound::Unbounded;
        }
    }
    if let Some((e, inclusive)) = upper {
        let v = ex.eval_const(e)?;
        if v.is_null() {
            return Ok(Vec::new());
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
            Err(KeyMiss::TooSmall) => return Ok(Vec::new()),
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
        return Ok(Vec::new());
    }
    let tree = BTree::open(idx.root);
    let mut cursor = tree.range(
        ex.ctx.reader,
        lo.as_ref().map(|v| v.as_slice()),
        hi.as_ref().map(|v| v.as_slice()),
        Direction::Forward,
    )?;
    let mut tids = Vec::new();
    while let Some((_, v)) = cursor.next_entry()? {
        let tid = TupleId::from_bytes(v).ok_or_else(|| Error::internal("malformed index value"))?;
        tids.push(tid);
        if tids.len() * 16 > ex.ctx.memory_limit {
            return Err(ex.mem_error("Index Scan"));
        }
    }
    Ok(tids)
}
