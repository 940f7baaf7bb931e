//! Real files through the operating system.

use std::fs::{File, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{FileSystem, OpenOptions, StorageFile};

/// How many symbolic links `canonical_path` follows before giving up (Linux's limit).
const MAX_LINK_HOPS: usize = 40;

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

    fn canonical_path(&self, path: &Path) -> io::Result<PathBuf> {
        // Follow a chain of links by hand first: a link to a file that does not exist
        // yet (a database about to be created through it) names its target, and
        // `canonicalize` alone would fail on it.
        let mut path = path.to_path_buf();
        for _ in 0..MAX_LINK_HOPS {
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => {
                    let target = std::fs::read_link(&path)?;
                    path = match path.parent() {
                        Some(dir) if target.is_relative() => dir.join(target),
                        _ => target,
                    };
                }
                _ => break,
            }
        }
        if path.exists() {
            return std::fs::canonicalize(&path);
        }
        let name = path.file_name().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} does not name a file", path.display()),
            )
        })?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => std::fs::canonicalize(d)?,
            _ => std::env::current_dir()?,
        };
        Ok(dir.join(name))
    }

    fn same_file(&self, a: &Path, b: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}
