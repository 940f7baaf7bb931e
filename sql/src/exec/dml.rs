//! Row-level changes inside a write transaction: heap tuples and their index entries,
//! with NOT NULL and UNIQUE / PRIMARY KEY enforcement.
//!
//! Every B+tree is created non-unique (a unique index may hold NULL keys more than
//! once); uniqueness is checked here, before anything is written, by looking the key
//! up when none of its columns is NULL.

use beedb_storage::btree::BTree;
use beedb_storage::heap::{HeapFile, HeapPage};
use beedb_storage::{PageId, PageRead, TupleId, WriteTxn};

use super::tuple_codec::{EncodedRow, decode_row, index_key, key_has_null};
use crate::bees::form::RowFormer;
use crate::catalog::{IndexDef, TableDef};
use crate::error::{Error, Result};
use crate::types::Value;

pub fn check_not_null(table: &TableDef, row: &[Value]) -> Result<()> {
    for (c, v) in table.columns.iter().zip(row) {
        if c.not_null && v.is_null() {
            return Err(Error::constraint(
                "23502",
                format!(
                    "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                    c.name, table.name
                ),
            ));
        }
    }
    Ok(())
}

fn duplicate(index: &IndexDef) -> Error {
    Error::constraint(
        "23505",
        format!(
            "duplicate key value violates unique constraint \"{}\"",
            index.name
        ),
    )
}

/// Whether `key` is present in `index` under a tuple other than `except`.
fn key_taken<R: PageRead + ?Sized>(
    r: &R,
    index: &IndexDef,
    key: &[u8],
    except: Option<TupleId>,
) -> Result<bool> {
    let tree = BTree::open(index.root);
    for v in tree.get_all(r, key)? {
        let v = v?;
        let tid =
            TupleId::from_bytes(&v).ok_or_else(|| Error::internal("malformed index value"))?;
        if Some(tid) != except {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The tuple holding `key` in the unique index `index`, if any (for ON CONFLICT).
pub fn find_key<R: PageRead + ?Sized>(r: &R, index: &IndexDef, key: &[u8]) -> Result<Option<TupleId>> {
    let tree = BTree::open(index.root);
    if let Some(v) = tree.get_all(r, key)?.next() {
        let v = v?;
        let tid = TupleId::from_bytes(&v).ok_or_else(|| Error::internal("malformed index value"))?;
        return Ok(Some(tid));
    }
    Ok(None)
}

/// The values of tuple `tid` of `table`.
pub fn fetch_row<R: PageRead + ?Sized>(r: &R, table: &TableDef, tid: TupleId) -> Result<Vec<Value>> {
    let tuple = HeapFile::open(table.heap)
        .get(r, tid)?
        .ok_or_else(|| Error::internal("an index entry without its tuple"))?;
    decode_row(r, table, &tuple)
}

/// Inserts a row (values of the column types) and its index entries.
pub fn insert_row(w: &WriteTxn, table: &TableDef, row: &[Value]) -> Result<TupleId> {
    insert_row_with(w, table, row, None)
}

/// A row encoded for the heap: by the form bee as tuple bytes, or generically as
/// attribute values (which the heap lays out, moving long values out of line).
enum RowBytes<'f> {
    Formed(&'f [u8]),
    Generic(EncodedRow),
}

impl<'f> RowBytes<'f> {
    /// Encodes `row` with `former` when there is one and the row stays inline.
    fn encode(w: &WriteTxn, table: &TableDef, row: &[Value], former: Option<&'f mut RowFormer>) -> Result<Self> {
        if let Some(f) = former
            && let Some(t) = f.form(table, row, w.page_size())?
        {
            return Ok(RowBytes::Formed(t));
        }
        Ok(RowBytes::Generic(EncodedRow::encode(table, row)?))
    }

    fn insert(&self, w: &WriteTxn, table: &TableDef) -> Result<TupleId> {
        let heap = HeapFile::open(table.heap);
        Ok(match self {
            RowBytes::Formed(t) => heap.insert_encoded(w, t)?,
            RowBytes::Generic(enc) => heap.insert(w, &enc.attrs(), &table.layout)?,
        })
    }

    fn update(&self, w: &WriteTxn, table: &TableDef, tid: TupleId) -> Result<TupleId> {
        let heap = HeapFile::open(table.heap);
        Ok(match self {
            RowBytes::Formed(t) => heap.update_encoded(w, tid, t, &table.layout)?,
            RowBytes::Generic(enc) => heap.update(w, tid, &enc.attrs(), &table.layout)?,
        })
    }
}

/// [`insert_row`], encoding with `former` (the relation's form bee) when given.
pub fn insert_row_with(
    w: &WriteTxn,
    table: &TableDef,
    row: &[Value],
    former: Option<&mut RowFormer>,
) -> Result<TupleId> {
    check_not_null(table, row)?;
    let bytes = RowBytes::encode(w, table, row, former)?;
    let mut keys = Vec::with_capacity(table.indexes.len());
    for idx in &table.indexes {
        let key = index_key(table, idx, row)?;
        if idx.unique && !key_has_null(idx, row) && key_taken(w, idx, &key, None)? {
            return Err(duplicate(idx));
        }
        keys.push(key);
    }
    let tid = bytes.insert(w, table)?;
    for (idx, key) in table.indexes.iter().zip(&keys) {
        BTree::open(idx.root).insert(w, key, &tid.to_bytes())?;
    }
    Ok(tid)
}

/// Deletes tuple `tid` (whose values are `old_row`) and its index entries.
pub fn delete_row(w: &WriteTxn, table: &TableDef, tid: TupleId, old_row: &[Value]) -> Result<()> {
    for idx in &table.indexes {
        let key = index_key(table, idx, old_row)?;
        BTree::open(idx.root).delete(w, &key, &tid.to_bytes())?;
    }
    HeapFile::open(table.heap).delete(w, tid, &table.layout)?;
    Ok(())
}

/// Replaces tuple `tid` (values `old_row`) with `new_row`; returns the tuple's id,
/// which changes when the new version does not fit in its page.
pub fn update_row(
    w: &WriteTxn,
    table: &TableDef,
    tid: TupleId,
    old_row: &[Value],
    new_row: &[Value],
) -> Result<TupleId> {
    update_row_with(w, table, tid, old_row, new_row, None)
}

/// [`update_row`], encoding with `former` (the relation's form bee) when given.
pub fn update_row_with(
    w: &WriteTxn,
    table: &TableDef,
    tid: TupleId,
    old_row: &[Value],
    new_row: &[Value],
    former: Option<&mut RowFormer>,
) -> Result<TupleId> {
    check_not_null(table, new_row)?;
    let bytes = RowBytes::encode(w, table, new_row, former)?;
    // No key column changed (TP1's balance updates): no index key to compare or
    // check, and the entries change only when the tuple moved.
    if table.indexes.iter().all(|idx| same_key_values(table, idx, old_row, new_row)) {
        let new_tid = bytes.update(w, table, tid)?;
        if new_tid != tid {
            for idx in &table.indexes {
                let key = index_key(table, idx, new_row)?;
                let tree = BTree::open(idx.root);
                tree.delete(w, &key, &tid.to_bytes())?;
                tree.insert(w, &key, &new_tid.to_bytes())?;
            }
        }
        return Ok(new_tid);
    }
    let mut keys = Vec::with_capacity(table.indexes.len());
    for idx in &table.indexes {
        let old = index_key(table, idx, old_row)?;
        let new = index_key(table, idx, new_row)?;
        if idx.unique
            && old != new
            && !key_has_null(idx, new_row)
            && key_taken(w, idx, &new, Some(tid))?
        {
            return Err(duplicate(idx));
        }
        keys.push((old, new));
    }
    let new_tid = bytes.update(w, table, tid)?;
    for (idx, (old, new)) in table.indexes.iter().zip(&keys) {
        if old != new || new_tid != tid {
            let tree = BTree::open(idx.root);
            tree.delete(w, old, &tid.to_bytes())?;
            tree.insert(w, new, &new_tid.to_bytes())?;
        }
    }
    Ok(new_tid)
}

/// Whether `old` and `new` hold the same value in every key column of `idx`, so
/// their keys are equal without encoding them. Only for types whose values are
/// equal exactly when their keys are: not floats (0 and −0 are equal values with
/// different keys) nor intervals (equal when months and days balance out).
fn same_key_values(table: &TableDef, idx: &IndexDef, old: &[Value], new: &[Value]) -> bool {
    use crate::types::DataType as T;
    idx.columns.iter().all(|&c| {
        !matches!(table.columns[c].ty, T::Real | T::Double | T::Interval)
            && match (&old[c], &new[c]) {
                (Value::Null, Value::Null) => true,
                (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b) && a == b,
            }
    })
}

/// Fills the (new, empty) index `table.indexes[index]` from the table's rows. A
/// unique index over duplicate keys fails with `could not create unique index`.
///
/// The entries are sorted first, within `memory_limit` (spilling sorted runs to a
/// temporary file, see [`super::external_sort`]), then inserted in key order: each
/// goes to the rightmost leaf, which splits as bulk loading would, and equal keys
/// arrive side by side, so uniqueness needs no lookups.
///
/// `interrupt` is checked at every heap page read and every [`INDEX_CHECK_EVERY`]
/// entries inserted, so a cancel or `statement_timeout` stops a long build (57014).
pub fn create_index_entries(
    w: &WriteTxn,
    table: &TableDef,
    index: usize,
    memory_limit: usize,
    interrupt: &super::interrupt::Interrupt,
) -> Result<()> {
    let idx = table
        .indexes
        .get(index)
        .ok_or_else(|| Error::internal(format!("no index {index} on \"{}\"", table.name)))?;
    let mut sorter = super::external_sort::EntrySorter::new(memory_limit);
    let heap = HeapFile::open(table.heap);
    let mut tuples: Vec<(TupleId, Vec<u8>)> = Vec::new();
    for g in heap.pages(w) {
        interrupt.check()?;
        // Copy the page's tuples out so no latch is held while their values (some of
        // them out of line, on other pages) are read.
        tuples.clear();
        {
            let g = g?;
            let page = g.id();
            for (slot, t) in HeapPage::new(&g, page)?.tuples()? {
                tuples.push((TupleId { page, slot }, t.to_vec()));
            }
        }
        for (tid, t) in &tuples {
            let row = decode_row(w, table, t)?;
            sorter.push(index_key(table, idx, &row)?, tid.to_bytes())?;
        }
    }
    let mut entries = sorter.finish()?;
    let tree = BTree::open(idx.root);
    let mut previous_key: Option<Vec<u8>> = None;
    let mut inserted = 0usize;
    while let Some((key, tid)) = entries.next_entry()? {
        if inserted % INDEX_CHECK_EVERY == 0 {
            interrupt.check()?;
        }
        inserted += 1;
        if idx.unique && previous_key.as_ref() == Some(&key) {
            // Equal keys: a duplicate unless the key has a NULL (then both rows have it).
            let tid = TupleId::from_bytes(&tid).ok_or_else(|| Error::internal("malformed tuple id"))?;
            let row = fetch_row(w, table, tid)?;
            if !key_has_null(idx, &row) {
                return Err(duplicate_in_new_index(table, idx, &row));
            }
        }
        tree.insert(w, &key, &tid)?;
        if idx.unique {
            previous_key = Some(key);
        }
    }
    Ok(())
}

/// How many entries `create_index_entries` inserts between two cancel checks.
pub const INDEX_CHECK_EVERY: usize = 1024;

/// CREATE UNIQUE INDEX's error for the key of `row`, found more than once.
fn duplicate_in_new_index(table: &TableDef, idx: &IndexDef, row: &[Value]) -> Error {
    let cols: Vec<&str> = idx.columns.iter().map(|&c| table.columns[c].name.as_str()).collect();
    let vals: Vec<String> = idx.columns.iter().map(|&c| row[c].to_string()).collect();
    Error::constraint(
        "23505",
        format!(
            "could not create unique index \"{}\": Key ({})=({}) is duplicated.",
            idx.name,
            cols.join(", "),
            vals.join(", ")
        ),
    )
}

/// Creates an empty heap; returns its first page (for `TableDef::heap`).
pub fn create_heap(w: &WriteTxn) -> Result<PageId> {
    Ok(HeapFile::create(w)?.first_page)
}

/// Creates an empty B+tree (always non-unique); returns its root (for `IndexDef::root`).
pub fn create_btree(w: &WriteTxn) -> Result<PageId> {
    Ok(BTree::create(w, false)?.root())
}

/// Frees a table's heap and all its indexes.
pub fn drop_table_storage(w: &WriteTxn, table: &TableDef) -> Result<()> {
    for idx in &table.indexes {
        drop_index_storage(w, idx)?;
    }
    HeapFile::open(table.heap).drop_heap(w, &table.layout)?;
    Ok(())
}

/// Frees an index's B+tree.
pub fn drop_index_storage(w: &WriteTxn, index: &IndexDef) -> Result<()> {
    BTree::open(index.root).drop_tree(w)?;
    Ok(())
}
