//! The file layer: the only place the storage engine touches bytes outside memory.
//!
//! Everything above this module reaches files through [`FileSystem`] and
//! [`StorageFile`], so the same engine runs on
//! - [`OsFileSystem`]: real files, positioned reads and writes, `fsync`, and an
//!   exclusive OS lock on the database file;
//! - [`MemFileSystem`]: files in memory, for `:memory:` databases and fast tests;
//! - [`FaultFileSystem`]: files in memory that remember which writes were synced and
//!   can fail the Nth write or sync, or "crash" and then drop, tear or reorder every
//!   write that was not synced (the crash tests are built on it).

mod fault;
mod mem;
mod os;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use fault::{CrashOutcome, FaultConfig, FaultFileSystem};
pub use mem::MemFileSystem;
pub use os::OsFileSystem;

/// One open file. Offsets are absolute; all methods take `&self` so several threads
/// can read while one writes (the engine serializes conflicting writes itself).
pub trait StorageFile: Send + Sync {
    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read (fewer only
    /// at end of file).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// Writes all of `buf` at `offset`, extending the file if needed.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Makes every completed write durable.
    fn sync(&self) -> io::Result<()>;
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Truncates or extends the file.
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// Reads exactly `buf.len()` bytes or fails with `UnexpectedEof`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            let n = self.read_at(&mut buf[done..], offset + done as u64)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("short read at offset {}", offset + done as u64),
                ));
            }
            done += n;
        }
        Ok(())
    }
}

/// How [`FileSystem::open`] should open a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    /// Create the file if it does not exist.
    pub create: bool,
    /// Take an exclusive lock for the life of the handle; fail with
    /// `io::ErrorKind::WouldBlock` if another holder has it.
    pub lock_exclusive: bool,
}

/// A namespace of files.
pub trait FileSystem: Send + Sync {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Arc<dyn StorageFile>>;
    fn exists(&self, path: &Path) -> bool;
    /// The one name of the file `path` names, however it is named (symbolic links
    /// followed, `.` and `..` resolved); the file need not exist yet. The store names the
    /// WAL after it, so every way of naming a database finds the same WAL. File systems
    /// without links return `path` itself.
    fn canonical_path(&self, path: &Path) -> io::Result<PathBuf> {
        Ok(path.to_path_buf())
    }
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Whether `a` and `b` name one file (hard links do). File systems without links
    /// compare the names.
    fn same_file(&self, a: &Path, b: &Path) -> bool {
        a == b
    }
}
