//! BeeDB's storage engine. It knows nothing about SQL: it stores pages, tuples and
//! keys, and makes changes to them atomic, isolated and durable.
//!
//! Modules in the order a page travels, from the disk up:
//! - [`file`](mod@file): the file layer behind a trait (OS, memory, fault injection);
//! - [`page`]: the common page header, checksums, page kinds;
//! - [`header`]: page 0, the database header and the free list head;
//! - [`wal`]: the write-ahead log of page images: commit, group commit, recovery;
//! - [`buffer_pool`]: the fixed-size cache of page versions, CLOCK eviction;
//! - [`store`]: database file + WAL: snapshots, the write transaction, checkpoints;
//! - [`access`]: page guards and the `PageRead`/`PageWrite` traits access methods use;
//! - [`tuple`](mod@tuple): the stored tuple format: layouts, encoder, generic decoder;
//! - [`heap`]: heap files of slotted pages, overflow chains for long values;
//! - [`btree`]: B+tree indexes and the order-preserving key encoding.
//!
//! A table as the SQL layer will keep one: a heap of rows and a unique index on the key,
//! reachable from a root slot of the database header.
//!
//! ```
//! use beedb_storage::btree::BTree;
//! use beedb_storage::heap::HeapFile;
//! use beedb_storage::tuple::{Attr, AttrValue, ColumnFormat, TupleLayout};
//! use beedb_storage::{Store, StoreOptions, TupleId};
//!
//! # fn main() -> beedb_storage::Result<()> {
//! let (store, _report) = Store::open(":memory:", StoreOptions::default())?;
//! let layout =
//!     TupleLayout::new(&[ColumnFormat::fixed(8, false), ColumnFormat::variable(true)])?;
//!
//! let w = store.begin_write()?; // the one writer; others wait
//! let heap = HeapFile::create(&w)?;
//! let index = BTree::create(&w, true)?;
//! let row = [AttrValue::Fixed(&7u64.to_le_bytes()), AttrValue::Variable(b"seven")];
//! let tid = heap.insert(&w, &row, &layout)?;
//! index.insert(&w, &7u64.to_be_bytes(), &tid.to_bytes())?;
//! w.set_root(0, heap.first_page.0 as u64)?;
//! w.commit()?; // durable when it returns (synchronous = full)
//!
//! let r = store.begin_read(); // a snapshot: never blocks, never blocked
//! let found = index.get(&r, &7u64.to_be_bytes())?.expect("indexed");
//! let tid = TupleId::from_bytes(&found).expect("a tuple id");
//! let tuple = heap.get(&r, tid)?.expect("stored");
//! assert_eq!(layout.attribute(&tuple, 1)?, Attr::Bytes(b"seven"));
//! # Ok(())
//! # }
//! ```

pub mod file;

pub mod page;

pub mod header;

pub mod wal;

pub mod buffer_pool;

pub mod store;

pub mod access;

pub mod tuple;

pub mod heap;

mod prefetch;

pub mod btree;

pub mod error;
pub mod ids;

#[cfg(test)]
mod testutil;

pub use access::{PageRead, PageReadGuard, PageWrite, PageWriteGuard};
pub use error::{Error, Result};
pub use ids::{Lsn, PageId, SlotId, TupleId, TxnId};
pub use store::{OpenReport, ReadTxn, Store, StoreOptions, Synchronous, WriteTxn, default_cache_size};
