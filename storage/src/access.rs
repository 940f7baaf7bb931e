//! How access methods (heap files, B+trees) reach pages.
//!
//! Page guards are the only way to page bytes. A guard pins its frame (the buffer pool
//! cannot evict a frame while any guard on it lives) and latches it (shared for
//! reading, exclusive for writing). Guards own what they hold, so a B+tree split can
//! hold the parent, the child and the new sibling at once; they do not borrow the
//! transaction.
//!
//! [`PageRead`] is implemented by read transactions (pages as of their snapshot) and by
//! write transactions (pages including their own changes); [`PageWrite`] only by write
//! transactions. Access methods are written against these traits and never see the
//! buffer pool, the WAL or versioning.
//!
//! Latch rule: a thread never holds two guards on the same page, and takes latches
//! top-down (B+tree parent before child, heap page before its overflow pages). Only one
//! write transaction exists at a time and committed page versions are immutable, so
//! readers never wait on a writer's latch.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use parking_lot::lock_api::{ArcRwLockReadGuard, ArcRwLockWriteGuard};
use parking_lot::{RawRwLock, RwLock};

use crate::error::Result;
use crate::ids::PageId;

/// The bytes of one page in memory.
pub type PageBuf = Box<[u8]>;

/// A buffer-pool frame: a page image behind a latch. Cloning the `Arc` pins it.
pub type Frame = Arc<RwLock<PageBuf>>;

/// Shared, pinned access to one page image.
pub struct PageReadGuard {
    id: PageId,
    guard: ArcRwLockReadGuard<RawRwLock, PageBuf>,
}

impl PageReadGuard {
    pub fn new(id: PageId, frame: &Frame) -> Self {
        PageReadGuard {
            id,
            guard: frame.read_arc(),
        }
    }

    pub fn id(&self) -> PageId {
        self.id
    }
}

impl Deref for PageReadGuard {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        &self.guard
    }
}

/// Exclusive, pinned access to a page the current write transaction is changing.
pub struct PageWriteGuard {
    id: PageId,
    guard: ArcRwLockWriteGuard<RawRwLock, PageBuf>,
}

impl PageWriteGuard {
    pub fn new(id: PageId, frame: &Frame) -> Self {
        PageWriteGuard {
            id,
            guard: frame.write_arc(),
        }
    }

    pub fn id(&self) -> PageId {
        self.id
    }
}

impl Deref for PageWriteGuard {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        &self.guard
    }
}

impl DerefMut for PageWriteGuard {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.guard
    }
}

/// Read access to pages, as of one snapshot.
pub trait PageRead {
    /// Pins and share-latches page `id`; verifies it if it had to be read from disk.
    fn read_page(&self, id: PageId) -> Result<PageReadGuard>;
    /// Page size of the database in bytes.
    fn page_size(&self) -> usize;
    /// A hint that page `id` will be read next: a reader whose page is cached asks the
    /// CPU to start loading its bytes, so a sequential scan does not wait for memory at
    /// each page. Reads nothing from disk; the default does nothing.
    fn prefetch_page(&self, _id: PageId) {}
}

/// Write access to pages, within the one active write transaction.
pub trait PageWrite: PageRead {
    /// Pins and exclusively latches the transaction's private copy of page `id`
    /// (copied from the latest committed version on first write).
    fn write_page(&self, id: PageId) -> Result<PageWriteGuard>;
    /// Allocates a page (from the free list, or by growing the file). The caller must
    /// format it with [`crate::page::format_page`] before releasing the guard.
    fn allocate_page(&self) -> Result<PageWriteGuard>;
    /// Returns a page to the free list. The caller must hold no guard on it.
    fn free_page(&self, id: PageId) -> Result<()>;
}

/// A trivial page store in memory with no versioning, for unit tests of access methods.
pub mod testing {
    use std::collections::HashMap;

    use parking_lot::{Mutex, RwLock};

    use super::*;
    use crate::error::Error;
    use crate::page::{PageKind, format_page};

    /// Pages in a map; page 0 is reserved (a header page, as in a real database).
    pub struct MemPageStore {
        page_size: usize,
        pages: Mutex<HashMap<PageId, Frame>>,
        free: Mutex<Vec<PageId>>,
        next: Mutex<u32>,
    }

    impl MemPageStore {
        pub fn new(page_size: usize) -> Self {
            MemPageStore {
                page_size,
                pages: Mutex::new(HashMap::new()),
                free: Mutex::new(Vec::new()),
                next: Mutex::new(1),
            }
        }

        /// Number of pages currently allocated (not free).
        pub fn allocated_pages(&self) -> usize {
            self.pages.lock().len()
        }
    }

    impl PageRead for MemPageStore {
        fn read_page(&self, id: PageId) -> Result<PageReadGuard> {
            let pages = self.pages.lock();
            let frame = pages
                .get(&id)
                .ok_or_else(|| Error::corrupt(id, "page not allocated"))?;
            Ok(PageReadGuard::new(id, frame))
        }

        fn page_size(&self) -> usize {
            self.page_size
        }
    }

    impl PageWrite for MemPageStore {
        fn write_page(&self, id: PageId) -> Result<PageWriteGuard> {
            let frame = self
                .pages
                .lock()
                .get(&id)
                .cloned()
                .ok_or_else(|| Error::corrupt(id, "page not allocated"))?;
            Ok(PageWriteGuard::new(id, &frame))
        }

        fn allocate_page(&self) -> Result<PageWriteGuard> {
            let id = match self.free.lock().pop() {
                Some(id) => id,
                None => {
                    let mut next = self.next.lock();
                    let id = PageId(*next);
                    *next += 1;
                    id
                }
            };
            let mut buf = vec![0u8; self.page_size].into_boxed_slice();
            format_page(&mut buf, id, PageKind::Free);
            let frame: Frame = Arc::new(RwLock::new(buf));
            self.pages.lock().insert(id, frame.clone());
            Ok(PageWriteGuard::new(id, &frame))
        }

        fn free_page(&self, id: PageId) -> Result<()> {
            if self.pages.lock().remove(&id).is_none() {
                return Err(Error::corrupt(id, "freeing a page that is not allocated"));
            }
            self.free.lock().push(id);
            Ok(())
        }
    }
}
