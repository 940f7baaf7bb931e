//! Files held in memory: `:memory:` databases and fast tests.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::{FileSystem, OpenOptions, StorageFile};

/// A file system whose files live in memory for as long as the `MemFileSystem` does.
/// Locks behave like the OS's: one exclusive holder per path at a time.
#[derive(Clone, Default)]
pub struct MemFileSystem {
    inner: Arc<MemInner>,
}

#[derive(Default)]
struct MemInner {
    files: Mutex<HashMap<PathBuf, Arc<RwLock<Vec<u8>>>>>,
    locked: Mutex<HashSet<PathBuf>>,
}

impl MemFileSystem {
    pub fn new() -> Self {
        Self::default()
    }
}

struct MemFile {
    data: Arc<RwLock<Vec<u8>>>,
    /// Set when this handle holds the path's exclusive lock; released on drop.
    lock: Option<(Arc<MemInner>, PathBuf)>,
}

impl Drop for MemFile {
    fn drop(&mut self) {
        if let Some((inner, path)) = self.lock.take() {
            inner.locked.lock().remove(&path);
        }
    }
}

pub(crate) fn read_from(data: &[u8], buf: &mut [u8], offset: u64) -> usize {
    let len = data.len() as u64;
    if offset >= len {
        return 0;
    }
    let start = offset as usize;
    let n = buf.len().min(data.len() - start);
    buf[..n].copy_from_slice(&data[start..start + n]);
    n
}

pub(crate) fn write_into(data: &mut Vec<u8>, buf: &[u8], offset: u64) {
    let end = offset as usize + buf.len();
    if data.len() < end {
        data.resize(end, 0);
    }
    data[offset as usize..end].copy_from_slice(buf);
}

impl StorageFile for MemFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        Ok(read_from(&self.data.read(), buf, offset))
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        write_into(&mut self.data.write(), buf, offset);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.data.read().len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.data.write().resize(len as usize, 0);
        Ok(())
    }
}

impl FileSystem for MemFileSystem {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Arc<dyn StorageFile>> {
        let data = {
            let mut files = self.inner.files.lock();
            match files.get(path) {
                Some(d) => d.clone(),
                None if options.create => {
                    let d = Arc::new(RwLock::new(Vec::new()));
                    files.insert(path.to_path_buf(), d.clone());
                    d
                }
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("{} not found", path.display()),
                    ));
                }
            }
        };
        let lock = if options.lock_exclusive {
            if !self.inner.locked.lock().insert(path.to_path_buf()) {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("{} is locked", path.display()),
                ));
            }
            Some((self.inner.clone(), path.to_path_buf()))
        } else {
            None
        };
        Ok(Arc::new(MemFile { data, lock }))
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.files.lock().contains_key(path)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.files.lock().remove(path);
        Ok(())
    }
}
