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

pub mod file;

pub mod page;

pub mod header;

pub mod wal;

pub mod buffer_pool;

pub mod store;

pub mod access;

pub mod tuple;

pub mod heap;

pub mod btree;

pub mod error;
pub mod ids;

#[cfg(test)]
mod testutil;

pub use access::{PageRead, PageReadGuard, PageWrite, PageWriteGuard};
pub use error::{Error, Result};
pub use ids::{Lsn, PageId, SlotId, TupleId, TxnId};
pub use store::{OpenReport, ReadTxn, Store, StoreOptions, Synchronous, WriteTxn};
