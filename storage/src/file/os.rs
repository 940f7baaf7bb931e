//! Real files through the operating system.

use std::fs::{File, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{FileSystem, OpenOptions, StorageFile};

/// How many symbolic links `canonical_path` follows before giving up (Linux's limit).
const MAX_LINK_HOPS: usize = 40;

/// How long an open waits for the database file's lock before it reports the
/// database locked. Not for a second process that keeps the database open (it gets
/// the error after this wait), but for a lock this process just released: a `flock`
/// belongs to the open file description, and a child that another thread of the
/// process is forking at that moment holds a copy of every descriptor until it
/// execs (close-on-exec). Closing a database and opening it again while any thread
/// spawns a process could then fail at random (seen in `tests/kill.rs` about once in
/// a hundred runs); the window is the fork-to-exec time, well under this wait.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// Takes `file`'s exclusive lock, retrying with a growing pause while another
/// description holds it, for at most `wait`; then `WouldBlock`.
fn lock_within(file: &File, path: &Path, wait: std::time::Duration) -> io::Result<()> {
    let start = std::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) if start.elapsed() < wait => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("{} is locked", path.display()),
                ));
            }
            Err(TryLockError::Error(e)) => return Err(e),
        }
    }
}

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
            lock_within(&file, path, LOCK_WAIT)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn lock_open(path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        OsFileSystem.open(path, OpenOptions { create: false, lock_exclusive: true })
    }

    /// A lock another description releases within [`LOCK_WAIT`] (a forked child's copy
    /// of the descriptor, until it execs) is taken; one held past it is reported.
    #[test]
    fn a_lock_released_within_the_wait_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let other = || std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).unwrap();
        let holder = other();
        holder.try_lock().unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(holder);
        });
        assert!(lock_open(&path).is_ok(), "the lock was free again after 50 ms");
        release.join().unwrap();
        let holder = other();
        holder.try_lock().unwrap();
        let started = std::time::Instant::now();
        let e = lock_open(&path).err().expect("a lock held throughout is reported");
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        assert!(started.elapsed() >= LOCK_WAIT);
    }
}
