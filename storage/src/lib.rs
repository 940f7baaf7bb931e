//! BeeDB's storage engine. It knows nothing about SQL: it stores pages, tuples and
//! keys, and makes changes to them atomic, isolated and durable.
//!
//! Modules in the order a page travels, from the disk up:
pub mod access;
pub mod btree; // B+tree access method: ordered byte-string keys for indexes
pub mod file; // file layer behind a trait: OS, memory, fault injection
pub mod page; // page header, checksums, page kinds // page guards and the PageRead/PageWrite traits access methods use

pub mod error;
pub mod ids;

pub use error::{Error, Result};
pub use ids::{Lsn, PageId, SlotId, TupleId, TxnId};
