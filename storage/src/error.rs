//! The storage layer's error type. Every failure reaches the caller as an
//! [`Error`]; nothing in this crate panics on bad input or a bad file.

use std::path::PathBuf;

use crate::ids::PageId;

/// Result alias used throughout the storage crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong in the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The operating system (or the injected file layer) failed an operation.
    #[error("I/O error while {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The file exists but does not start with BeeDB's header.
    #[error("{path} is not a BeeDB database (bad magic bytes)")]
    NotADatabase { path: PathBuf },
    /// The file was written by a newer BeeDB with a format this build cannot read.
    #[error("{path} uses BeeDB file format {found}; this build reads format {supported} and older")]
    NewerFormat {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    /// The file is shorter than its header says.
    #[error(
        "{path} is truncated: the header declares {expected_pages} pages but the file holds {actual_pages}"
    )]
    Truncated {
        path: PathBuf,
        expected_pages: u64,
        actual_pages: u64,
    },
    /// A page failed verification (checksum, page id, or structure).
    #[error("corrupt page {page}: {detail}")]
    CorruptPage { page: PageId, detail: String },
    /// Tuple bytes that do not decode under the relation's layout (truncated, a length
    /// running past the end, reserved flag bits, an unknown tuple-bee id…). Raised by
    /// the tuple decoder, which does not know the page; access methods that read the
    /// tuple from a page report [`Error::CorruptPage`] with the page id instead.
    #[error("malformed tuple: {0}")]
    CorruptTuple(String),
    /// A WAL frame failed verification although later frames prove it was durable.
    #[error("corrupt write-ahead log at frame {frame} (page {page}): {detail}")]
    CorruptWal {
        frame: u64,
        page: PageId,
        detail: String,
    },
    /// Another process (or another `Database` in this process) has the file open.
    #[error(
        "{path} is locked by another process (or another open handle); BeeDB allows one process per database file"
    )]
    Locked { path: PathBuf },
    /// A writer waited for the write lock longer than its timeout.
    #[error(
        "timed out after {waited_ms} ms waiting for the write lock held by another transaction"
    )]
    WriterTimeout { waited_ms: u64 },
    /// The buffer pool has no frame it can evict (every frame is pinned).
    #[error("buffer pool exhausted: all {frames} frames are pinned")]
    PoolExhausted { frames: usize },
    /// A record is too large for the structure it goes into.
    #[error("{what} of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        what: &'static str,
        size: usize,
        limit: usize,
    },
    /// A unique B+tree already holds the key.
    #[error("duplicate key in unique index")]
    DuplicateKey,
    /// A tuple id that does not name a live tuple.
    #[error("no tuple at {0}")]
    NoSuchTuple(crate::ids::TupleId),
    /// The transaction was used after a failure forced it to roll back, or after commit.
    #[error("transaction is no longer active: {0}")]
    TransactionClosed(&'static str),
    /// The database was closed or crashed and can no longer be used.
    #[error("database is closed: {0}")]
    Closed(&'static str),
    /// An argument outside the accepted range (page size, option value…).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl Error {
    /// Wraps an I/O error with what the storage layer was doing.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// Shorthand for a structural corruption found on a page.
    pub fn corrupt(page: PageId, detail: impl Into<String>) -> Self {
        Error::CorruptPage {
            page,
            detail: detail.into(),
        }
    }
}
