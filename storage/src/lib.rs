//! BeeDB's storage engine. It knows nothing about SQL: it stores pages, tuples and
//! keys, and makes changes to them atomic, isolated and durable.
//!
//! Modules in the order a page travels, from the disk up (blank lines keep rustfmt
//! from sorting them):

// File layer behind a trait: OS, memory, fault injection.
pub mod file;

// Page header, checksums, page kinds.
pub mod page;

// Page guards and the PageRead/PageWrite traits access methods use.
pub mod access;

// The stored tuple format: layouts, encoder, generic decoder.
pub mod tuple;

// Heap files of slotted pages; overflow chains for long values.
pub mod heap;

pub mod error;
pub mod ids;

#[cfg(test)]
mod testutil;

pub use error::{Error, Result};
pub use ids::{Lsn, PageId, SlotId, TupleId, TxnId};
