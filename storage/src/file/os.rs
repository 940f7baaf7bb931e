//! Real files through the operating system.

use std::fs::{File, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use super::{FileSystem, OpenOptions, StorageFile};

/// The operating system's files. The database file is locked with an exclusive
/// advisory lock (`flock`) held as long as the handle lives, so a second process
/// opening the same database gets a clear error instead of a second writer.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsFileSystem;

struct OsFile {
    file: File,
}

impl StorageFile for OsFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        loop {
            match self.file.read_at(buf, offset) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    fn sync(&self) -> io::Result<()> {
        // fdatasync: the data, plus the metadata needed to read it back (a grown file's
        // length included), without the timestamps `fsync` would also flush.
        self.file.sync_data()
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }
}

impl FileSystem for OsFileSystem {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Arc<dyn StorageFile>> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(options.create)
            .truncate(false)
            .open(path)?;
        if options.lock_exclusive {
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WouldBlock,
                        format!("{} is locked", path.display()),
                    ));
                }
                Err(TryLockError::Error(e)) => return Err(e),
            }
        }
        Ok(Arc::new(OsFile { file }))
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}
