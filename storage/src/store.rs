//! A store: one database file plus its WAL, with snapshot read transactions and one
//! write transaction at a time. This is where pages, the buffer pool and the WAL meet.
//!
//! ## Versions and snapshots
//! Committed page versions are immutable and named by LSN (see `wal.rs`). Three
//! LSNs move forward:
//! - `committed`: the newest committed transaction's last frame. The write
//!   transaction builds on it.
//! - `visible`: what a new reader's snapshot is. Under `synchronous = full` it moves
//!   only after the commit is durable, so no reader ever sees data a crash could take
//!   back; otherwise it equals `committed`.
//! - `backfilled`: frames up to here have been copied into the database file.
//!
//! Checkpoints run on a background thread by default (see
//! `StoreCore::checkpoint_in_background`): the long part needs no write lock.
//! A reader registers its snapshot; a checkpoint copies only frames ≤ the oldest
//! registered snapshot, and resets the WAL only when every reader is at the newest
//! commit, so a reader never blocks a writer and is never blocked by one.
//!
//! ## The write transaction
//! The writer holds the write lock (others wait, up to `writer_timeout`; see
//! `StoreCore::acquire_writer` for who gets it next). The first
//! `write_page` of a page copies its newest committed version into a private frame;
//! private frames live outside the buffer pool, so nobody else can see them. When there
//! are more than `writer_dirty_pages_max` of them, unpinned ones are *spilled*: written
//! to the WAL as frames without COMMIT, to be re-read if needed. Commit appends the
//! remaining private frames, the last one marked COMMIT, then publishes them.
//! Rollback throws the private frames away; spilled frames stay in the WAL as
//! garbage that recovery skips.
//!
//! ## Savepoints
//! After [`WriteTxn::savepoint`], the first change of a page records its prior state
//! in the transaction (not changed, spilled as a frame, or a copy of its private
//! image) in the newest savepoint; [`WriteTxn::rollback_to_savepoint`] restores those
//! states, so it costs the pages changed since. Pages spilled after the savepoint get
//! a private copy of their restored state: recovery applies every frame of a
//! committed transaction, and the commit must write after the stale spilled ones.
//!
//! ## Synchronous modes (like SQLite's in WAL mode)
//! - `full`: a commit returns after its COMMIT frame is synced; concurrent
//!   committers share one sync (group commit). A crash loses no acknowledged commit.
//! - `normal`: commits are not synced; the WAL is synced before each checkpoint. A
//!   power loss may lose the most recent commits, never consistency.
//! - `off`: like `normal` (BeeDB still syncs at checkpoints, so even `off` never
//!   corrupts the database; it only gives up durability of recent commits).
//!
//! ## State transitions
//! | transition                     | function                 |
//! |--------------------------------|--------------------------|
//! | closed → open (recovery)       | [`Store::open`]          |
//! | idle → writing                 | [`Store::begin_write`]   |
//! | writing → committed            | [`WriteTxn::commit`]     |
//! | writing → idle (rolled back)   | [`WriteTxn::rollback`] / drop |
//! | writing → writing (to a savepoint) | [`WriteTxn::rollback_to_savepoint`] |
//! | WAL → database file            | [`Store::checkpoint`], the checkpointer thread |
//! | open → closed                  | [`Store::close`] / drop  |
//! | any → poisoned (I/O failure)   | `StoreCore::poison`      |
//!
//! A failed WAL write or sync *poisons* the store: the outcome of that commit is
//! unknown until recovery, so no further write is allowed; reopen to recover.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};

use crate::access::{Frame, PageBuf, PageRead, PageReadGuard, PageWrite, PageWriteGuard};
use crate::buffer_pool::BufferPool;
use crate::error::{Error, Result};
use crate::file::{FileSystem, MemFileSystem, OpenOptions, OsFileSystem, StorageFile};
use crate::header::{self, FILE_FORMAT_VERSION, IDENTIFY_BYTES, ROOT_SLOTS};
use crate::ids::{Lsn, PageId, TxnId};
use crate::page::{
    self, DEFAULT_PAGE_SIZE, PageKind, format_page, read_u32, seal_page, verify_page, write_u32,
};
use crate::wal::{FrameWrite, Wal};

/// How long a writer waits for the write lock before the next release must hand it
/// over (see `StoreCore::acquire_writer`): the longest a client can be passed over by
/// one that keeps committing short transactions.
pub const WRITER_HANDOFF_AFTER: Duration = Duration::from_millis(2);

/// When a commit is durable; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Synchronous {
    Off,
    Normal,
    #[default]
    Full,
}

impl std::str::FromStr for Synchronous {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "off" | "0" => Ok(Synchronous::Off),
            "normal" | "1" => Ok(Synchronous::Normal),
            "full" | "2" => Ok(Synchronous::Full),
            other => Err(Error::InvalidArgument(format!(
                "synchronous must be off, normal or full, not {other:?}"
            ))),
        }
    }
}

/// The buffer pool's default size: a quarter of the machine's memory, between 256 MB
/// and 16 GB (256 MB where the memory cannot be read). The pool only grows as pages
/// are read, so a small database never takes it all; a database larger than the pool
/// rereads every page of a scan from the operating system's cache, one `pread` each
/// (TPC-H SF 1's `lineitem` is over 1 GB: Q6 took 0.8 s with a 256 MB pool, 0.39 s
/// with the table cached).
pub fn default_cache_size() -> usize {
    const MIN: usize = 256 << 20;
    const MAX: usize = 16 << 30;
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        kb.checked_mul(1024)
    });
    total.map_or(MIN, |t| (t / 4).clamp(MIN, MAX))
}

/// Options for [`Store::open`].
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Page size of a new database (ignored when opening an existing one).
    pub page_size: usize,
    /// Buffer pool size in bytes (default [`default_cache_size`]).
    pub cache_size_bytes: usize,
    pub synchronous: Synchronous,
    /// How long `begin_write` waits for another writer before failing.
    pub writer_timeout: Duration,
    /// Checkpoint automatically when the WAL holds more frames than this.
    pub checkpoint_frames: u64,
    /// Spill a writer's private pages to the WAL beyond this many.
    pub writer_dirty_pages_max: usize,
    /// Create the database if the file does not exist.
    pub create: bool,
    /// Run automatic checkpoints on a background thread (the default), so committing
    /// threads do not wait for the WAL and database syncs of a checkpoint; otherwise the
    /// commit that crosses `checkpoint_frames` checkpoints before it returns.
    pub background_checkpoint: bool,
    /// After a checkpoint empties the WAL, a WAL file longer than this many bytes is
    /// truncated back to it (SQLite's `journal_size_limit`); shorter ones are reused as
    /// they are, which is cheaper than growing the file again.
    pub wal_size_limit: u64,
    /// Open without writing anything: no recovery checkpoint, no write transactions
    /// (they fail with `Error::Closed`), no checkpoints, no WAL created. Recovered
    /// commits are read from the WAL in place. This is how a database is read while
    /// its disk is full.
    pub read_only: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            page_size: DEFAULT_PAGE_SIZE,
            cache_size_bytes: default_cache_size(),
            synchronous: Synchronous::Full,
            writer_timeout: Duration::from_secs(5),
            checkpoint_frames: 2000,
            writer_dirty_pages_max: 4096,
            create: true,
            background_checkpoint: true,
            wal_size_limit: crate::wal::DEFAULT_WAL_SIZE_LIMIT,
            read_only: false,
        }
    }
}

/// Counters, for tests and benchmarks.
#[derive(Debug, Default)]
pub struct StoreStats {
    pub commits: AtomicU64,
    pub rollbacks: AtomicU64,
    pub frames_written: AtomicU64,
    pub pages_spilled: AtomicU64,
    pub checkpoints: AtomicU64,
    pub wal_resets: AtomicU64,
    /// Background checkpoints that failed (an I/O error; the store is then poisoned).
    pub checkpoint_failures: AtomicU64,
}

/// What recovery did at open.
#[derive(Debug, Default, Clone)]
pub struct OpenReport {
    pub created: bool,
    pub recovered_txns: u64,
    pub discarded_frames: u64,
    /// Valid delta frames found in the WAL by recovery.
    pub delta_frames: u64,
}

/// The state of an open store, shared by every handle, transaction and the background
/// checkpointer.
struct StoreCore {
    path: PathBuf,
    /// The WAL's file (see `find_wal`), stamped into page 0 by every checkpoint.
    wal_path: PathBuf,
    db_file: Arc<dyn StorageFile>,
    wal: Wal,
    pool: BufferPool,
    page_size: usize,
    options: RwLock<StoreOptions>,
    /// The write lock (see [`StoreCore::acquire_writer`]): whether a writer holds it,
    /// and the condition variable parked waiters sleep on.
    writer_busy: Mutex<bool>,
    writer_released: Condvar,
    /// Waiters that go before every other (the background checkpointer, and waiters
    /// parked longer than [`WRITER_HANDOFF_AFTER`]): while there is one, no other
    /// waiter takes a free write lock.
    writer_urgent: AtomicUsize,
    committed: AtomicU64,
    visible: AtomicU64,
    backfilled: AtomicU64,
    /// Registered reader snapshots (LSN → number of readers at it).
    readers: Mutex<BTreeMap<u64, usize>>,
    next_txn: AtomicU64,
    poisoned: Mutex<Option<String>>,
    /// Serializes checkpoints (explicit, automatic and background).
    checkpoint_lock: Mutex<()>,
    /// Set when checkpoints run on the background thread.
    checkpointer: Option<Arc<CheckpointSignal>>,
    stats: StoreStats,
}

/// An open database file. Cheap to clone; every clone is the same store.
#[derive(Clone)]
pub struct Store {
    inner: Arc<StoreInner>,
}

fn wal_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push("-wal");
    PathBuf::from(s)
}

/// The WAL of the database file `path` (canonical, open as `db_file`): the one its
/// header records if that file exists, else the one named after `path`.
///
/// Hard links give one file several canonical names, and a WAL named after one of them
/// cannot be found from another: opening by the second name would miss commits that are
/// only in the WAL, and a later open by the first name would replay that WAL's old frames
/// over newer pages. So the database file's page 0 records the path of the WAL in use
/// (stamped at creation and by every checkpoint), and every name follows it. When the
/// recorded WAL is gone (deleted with its frames folded in, or never recorded), the WAL
/// named after `path` becomes the database's WAL, and page 0 is restamped and synced
/// before that WAL is opened, so a crash in between leaves a header naming it.
fn find_wal(
    fs: &dyn FileSystem,
    path: &Path,
    db_file: &dyn StorageFile,
    page_size: usize,
    read_only: bool,
) -> Result<PathBuf> {
    let ours = wal_path(path);
    let mut page0 = vec![0u8; page_size];
    // A page 0 that does not verify (torn by a crash mid-checkpoint; the WAL repairs it)
    // records nothing we can trust, and must not be resealed.
    if db_file.read_exact_at(&mut page0, 0).is_err() || verify_page(&page0, PageId::HEADER).is_err() {
        return Ok(ours);
    }
    let recorded = header::wal_path(&page0).map(|b| {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(std::ffi::OsStr::from_bytes(b))
    });
    match recorded {
        Some(recorded) if recorded == ours => Ok(ours),
        Some(recorded) if fs.exists(&recorded) && !another_file_owns(fs, &recorded, path) => Ok(recorded),
        _ if read_only => Ok(ours),
        _ => {
            if header::set_wal_path(&mut page0, ours.as_os_str().as_encoded_bytes()) {
                seal_page(&mut page0);
                db_file
                    .write_at(&page0, 0)
                    .and_then(|_| db_file.sync())
                    .map_err(|e| Error::io("recording the WAL's path in the database header", e))?;
            }
            Ok(ours)
        }
    }
}

/// Whether the WAL `recorded` belongs to a database file other than `path`: one that
/// exists under the WAL's name and is not `path` by another name. A copy of a database
/// file (made with or without its WAL) records its original's WAL; following it would
/// make two databases write one WAL, and each replay the other's commits. A recorded
/// WAL whose database file is gone (renamed without its WAL) is still followed.
fn another_file_owns(fs: &dyn FileSystem, recorded: &Path, path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Some(owner) = recorded.as_os_str().as_bytes().strip_suffix(b"-wal") else {
        return true;
    };
    let owner = Path::new(std::ffi::OsStr::from_bytes(owner));
    // An empty file at the owner's name (a creation refused by `refuse_foreign_wal`, or
    // a `touch`) is no database and owns no WAL.
    let empty = || {
        fs.open(owner, OpenOptions { create: false, lock_exclusive: false })
            .and_then(|f| f.len())
            .is_ok_and(|len| len == 0)
    };
    fs.exists(owner) && !fs.same_file(owner, path) && !empty()
}

/// Refuses to create a database at `path` (canonical, its file empty) while the WAL
/// named after it holds committed transactions: that WAL is another database's (the
/// file it belonged to was renamed, or hard-linked and unlinked, or deleted, before its
/// commits were checkpointed). A WAL with no committed frame of its current generation
/// (reset, torn before its first commit, empty, or not a WAL at all) is stale and
/// removed by the caller; one that cannot be read or recovered is refused too, since
/// what it holds cannot be told.
fn refuse_foreign_wal(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    let wal = wal_path(path);
    if !fs.exists(&wal) {
        return Ok(());
    }
    let refuse = |what: String| {
        Err(Error::InvalidArgument(format!(
            "cannot create a new database at {db}: {wal} {what}. It is the write-ahead log of \
             another database file, probably renamed, moved or deleted (with a hard link \
             left) before its commits were checkpointed. Open that database (it finds this \
             WAL through its own header) so its commits are kept; or, if that database is \
             gone and its commits are not wanted, delete {wal} and retry",
            db = path.display(),
            wal = wal.display(),
        )))
    };
    let file = fs
        .open(&wal, OpenOptions { create: false, lock_exclusive: false })
        .map_err(|e| Error::io(format!("opening {}", wal.display()), e))?;
    let len = file.len().map_err(|e| Error::io("reading the WAL length", e))?;
    let mut header = [0u8; crate::wal::WAL_HEADER_BYTES];
    if len < header.len() as u64 {
        return Ok(());
    }
    file.read_exact_at(&mut header, 0)
        .map_err(|e| Error::io(format!("reading {}", wal.display()), e))?;
    drop(file);
    if &header[0..8] != b"BeeDBWAL" {
        return Ok(());
    }
    // The page size and database id of the database it belongs to (header bytes 12 and
    // 16; a header that does not verify is reported by the recovery below).
    let page_size = crate::page::read_u32(&header, 12) as usize;
    let database_id = crate::page::read_u64(&header, 16);
    if !(crate::page::MIN_PAGE_SIZE..=crate::page::MAX_PAGE_SIZE).contains(&page_size)
        || !page_size.is_power_of_two()
    {
        return refuse(format!("has a header naming page size {page_size}"));
    }
    match Wal::open(fs, &wal, page_size, database_id, Lsn(1), true) {
        Ok((_, recovered)) if recovered.committed_txns == 0 => Ok(()),
        Ok((_, recovered)) => refuse(format!(
            "holds {} committed transaction(s) not yet in any database file",
            recovered.committed_txns
        )),
        Err(e) => refuse(format!("cannot be recovered ({e})")),
    }
}

fn random_id() -> u64 {
    // No `rand` dependency in the engine: time and address entropy is enough for an
    // identifier that only has to differ between databases.
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish() | 1
}

impl Store {
    /// Opens the database at `path` on the real file system; `":memory:"` opens a new
    /// in-memory database.
    pub fn open(path: impl AsRef<Path>, options: StoreOptions) -> Result<(Store, OpenReport)> {
        let path = path.as_ref();
        if path.as_os_str() == ":memory:" {
            let fs = MemFileSystem::new();
            return Self::open_with(&fs, Path::new(":memory:"), options);
        }
        Self::open_with(&OsFileSystem, path, options)
    }

    /// Opens the database at `path` in the file system `fs`, recovering from the WAL.
    pub fn open_with(
        fs: &dyn FileSystem,
        path: &Path,
        options: StoreOptions,
    ) -> Result<(Store, OpenReport)> {
        page::validate_page_size(options.page_size)?;
        // The database is its real file: every name of it (a symbolic link, `..`) opens
        // the same file and names the same WAL, so none can miss the WAL's commits.
        let path = &fs
            .canonical_path(path)
            .map_err(|e| Error::io(format!("resolving {}", path.display()), e))?;
        if (options.read_only || !options.create) && !fs.exists(path) {
            return Err(Error::io(
                format!("opening {}", path.display()),
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such database file"),
            ));
        }
        let existed = fs.exists(path);
        let db_file = fs
            .open(
                path,
                OpenOptions {
                    create: options.create,
                    lock_exclusive: true,
                },
            )
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::WouldBlock {
                    Error::Locked {
                        path: path.to_path_buf(),
                    }
                } else {
                    Error::io(format!("opening {}", path.display()), e)
                }
            })?;
        let len = db_file
            .len()
            .map_err(|e| Error::io("reading the database file length", e))?;
        let mut report = OpenReport::default();
        if len == 0 && options.read_only {
            return Err(Error::InvalidArgument(format!(
                "{} is empty: a database opened read-only cannot be created",
                path.display()
            )));
        }
        let (page_size, database_id, wal_file) = if len == 0 {
            // A new database: write and sync the header page before anything else.
            let page_size = options.page_size;
            let database_id = random_id();
            let mut p = vec![0u8; page_size];
            format_page(&mut p, PageId::HEADER, PageKind::DatabaseHeader);
            header::write_magic(&mut p);
            header::set_format_version(&mut p, FILE_FORMAT_VERSION);
            header::set_page_size(&mut p, page_size as u32);
            header::set_page_count(&mut p, 1);
            header::set_database_id(&mut p, database_id);
            header::set_wal_path(&mut p, wal_path(path).as_os_str().as_encoded_bytes());
            seal_page(&mut p);
            // A WAL left beside an empty file cannot belong to the new database, but it
            // may hold another database's commits: the WAL of a file renamed (or
            // hard-linked, then unlinked) after a crash, which that file's page 0 still
            // names. Deleting it would lose them; refuse instead (see `foreign_wal`).
            if let Err(e) = refuse_foreign_wal(fs, path) {
                if !existed {
                    // Leave no empty file behind (this open created it): the user sees
                    // no half-made database, only the error.
                    let _ = fs.remove(path);
                }
                return Err(e);
            }
            fs.remove(&wal_path(path))
                .map_err(|e| Error::io("removing a stale WAL", e))?;
            db_file
                .write_at(&p, 0)
                .and_then(|_| db_file.sync())
                .map_err(|e| Error::io("writing the database header", e))?;
            report.created = true;
            (page_size, database_id, wal_path(path))
        } else {
            let mut id = [0u8; IDENTIFY_BYTES];
            if len < IDENTIFY_BYTES as u64 {
                return Err(Error::NotADatabase {
                    path: path.to_path_buf(),
                });
            }
            db_file
                .read_exact_at(&mut id, 0)
                .map_err(|e| Error::io("reading the database header", e))?;
            if !header::has_magic(&id) {
                return Err(Error::NotADatabase {
                    path: path.to_path_buf(),
                });
            }
            let version = header::format_version(&id);
            if version > FILE_FORMAT_VERSION {
                return Err(Error::NewerFormat {
                    path: path.to_path_buf(),
                    found: version,
                    supported: FILE_FORMAT_VERSION,
                });
            }
            let page_size = header::page_size(&id) as usize;
            page::validate_page_size(page_size).map_err(|_| {
                Error::corrupt(PageId::HEADER, format!("invalid page size {page_size}"))
            })?;
            let wal = find_wal(fs, path, &*db_file, page_size, options.read_only)?;
            (page_size, header::database_id(&id), wal)
        };

        let (wal, recovered) = if options.read_only && !fs.exists(&wal_file) {
            // Nothing to recover, and nothing may be created: an empty WAL in memory.
            Wal::open(&MemFileSystem::new(), &wal_file, page_size, database_id, Lsn(1), false)?
        } else {
            Wal::open(fs, &wal_file, page_size, database_id, Lsn(1), options.read_only)?
        };
        report.recovered_txns = recovered.committed_txns;
        report.discarded_frames = recovered.uncommitted_frames;
        report.delta_frames = recovered.delta_frames;
        let committed = wal.next_lsn().0 - 1;
        let opts = options.clone();
        let frames_max = (opts.cache_size_bytes / page_size).max(64);
        let core = Arc::new(StoreCore {
            path: path.to_path_buf(),
            wal_path: wal_file,
            db_file,
            wal,
            pool: BufferPool::new(frames_max, page_size),
            page_size,
            options: RwLock::new(opts),
            writer_busy: Mutex::new(false),
            writer_released: Condvar::new(),
            writer_urgent: AtomicUsize::new(0),
            committed: AtomicU64::new(committed),
            visible: AtomicU64::new(committed),
            backfilled: AtomicU64::new(0),
            readers: Mutex::new(BTreeMap::new()),
            next_txn: AtomicU64::new(recovered.max_txn.0 + 1),
            poisoned: Mutex::new(None),
            checkpoint_lock: Mutex::new(()),
            checkpointer: (options.background_checkpoint && !options.read_only)
                .then(|| Arc::new(CheckpointSignal::default())),
            stats: StoreStats::default(),
        });
        let checkpointer_thread = match &core.checkpointer {
            Some(signal) => {
                let (core, signal) = (core.clone(), signal.clone());
                Some(
                    std::thread::Builder::new()
                        .name("beedb-checkpointer".into())
                        .spawn(move || run_checkpointer(core, signal))
                        .map_err(|e| Error::io("starting the checkpointer thread", e))?,
                )
            }
            None => None,
        };
        let store = Store {
            inner: Arc::new(StoreInner {
                core,
                checkpointer_thread,
            }),
        };
        store.check_not_truncated()?;
        if recovered.frames_in_file > 0 && !options.read_only {
            // Fold the recovered log into the database file and start a new WAL
            // generation, even if no frame was valid: frames the crashed session wrote
            // past the first invalid one carry the old salt, so none of them can ever
            // be taken for a continuation of the new log.
            store.checkpoint()?;
            let limit = store.inner.options.read().wal_size_limit;
            store.inner.wal.reset(limit)?;
        }
        Ok((store, report))
    }

    /// Every page the header counts must exist in the file or the WAL.
    fn check_not_truncated(&self) -> Result<()> {
        let inner = &self.inner;
        let snapshot = Lsn(inner.committed.load(Ordering::Acquire));
        let hdr = inner.read_committed(PageId::HEADER, snapshot)?;
        let guard = PageReadGuard::new(PageId::HEADER, &hdr);
        page::expect_kind(&guard, PageId::HEADER, PageKind::DatabaseHeader)?;
        let expected = header::page_count(&guard) as u64;
        drop(guard);
        let len = inner
            .db_file
            .len()
            .map_err(|e| Error::io("reading the database file length", e))?;
        let file_pages = len / inner.page_size as u64;
        for p in file_pages..expected {
            if inner.wal.version_for(PageId(p as u32), snapshot) == Lsn::IN_DATABASE_FILE {
                return Err(Error::Truncated {
                    path: inner.path.clone(),
                    expected_pages: expected,
                    actual_pages: file_pages,
                });
            }
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    pub fn page_size(&self) -> usize {
        self.inner.page_size
    }

    pub fn stats(&self) -> &StoreStats {
        &self.inner.stats
    }

    pub fn pool(&self) -> &BufferPool {
        &self.inner.pool
    }

    pub fn wal_syncs(&self) -> u64 {
        self.inner.wal.syncs.load(Ordering::Relaxed)
    }

    /// Delta frames (a page's changed byte ranges, see `wal.rs`) written since open.
    pub fn wal_delta_frames(&self) -> u64 {
        self.inner.wal.delta_frames.load(Ordering::Relaxed)
    }

    /// Bytes appended to the WAL since open (frames with headers and padding).
    pub fn wal_bytes_appended(&self) -> u64 {
        self.inner.wal.bytes_appended.load(Ordering::Relaxed)
    }

    pub fn synchronous(&self) -> Synchronous {
        self.inner.options.read().synchronous
    }

    pub fn set_synchronous(&self, mode: Synchronous) {
        self.inner.options.write().synchronous = mode;
    }

    pub fn set_writer_timeout(&self, timeout: Duration) {
        self.inner.options.write().writer_timeout = timeout;
    }

    /// How long [`Store::begin_write`] waits for the current writer.
    pub fn writer_timeout(&self) -> Duration {
        self.inner.options.read().writer_timeout
    }

    /// Starts a read transaction on the newest visible snapshot. Never blocks.
    pub fn begin_read(&self) -> ReadTxn {
        let mut readers = self.inner.readers.lock();
        let snapshot = self.inner.visible.load(Ordering::Acquire);
        *readers.entry(snapshot).or_insert(0) += 1;
        ReadTxn {
            inner: self.inner.clone(),
            snapshot: Lsn(snapshot),
        }
    }

    /// Starts the write transaction, waiting up to the writer timeout for the current
    /// writer to finish.
    pub fn begin_write(&self) -> Result<WriteTxn> {
        let timeout = self.inner.options.read().writer_timeout;
        self.begin_write_timeout(timeout)
    }

    pub fn begin_write_timeout(&self, timeout: Duration) -> Result<WriteTxn> {
        if self.inner.options.read().read_only {
            return Err(Error::Closed("the database is open read-only"));
        }
        self.inner.check_poison()?;
        self.inner.acquire_writer(timeout)?;
        if let Err(e) = self.inner.check_poison() {
            self.inner.release_writer();
            return Err(e);
        }
        let base = Lsn(self.inner.committed.load(Ordering::Acquire));
        Ok(WriteTxn {
            inner: self.inner.clone(),
            txn: TxnId(self.inner.next_txn.fetch_add(1, Ordering::Relaxed)),
            base,
            state: Mutex::new(WriteState::default()),
            finished: false,
        })
    }

    /// Copies committed WAL frames into the database file and resets the WAL if no
    /// reader still needs it. Waits for the write lock.
    pub fn checkpoint(&self) -> Result<()> {
        if self.inner.options.read().read_only {
            return Ok(()); // nothing was written, so nothing to fold in
        }
        let timeout = self.inner.options.read().writer_timeout;
        self.inner.acquire_writer(timeout)?;
        let r = {
            let _checkpoint = self.inner.checkpoint_lock.lock();
            self.inner.checkpoint_locked()
        };
        self.inner.release_writer();
        r
    }

    /// Reads every page of the newest snapshot from disk (bypassing the buffer pool) and
    /// verifies its checksum, page id and kind, then walks the free list. Returns the
    /// number of pages of each kind, indexed by `PageKind as usize`.
    pub fn verify_pages(&self) -> Result<[u64; 8]> {
        let r = self.begin_read();
        let inner = &self.inner;
        let count = r.page_count()?;
        let mut kinds = [0u64; 8];
        let mut buf = vec![0u8; inner.page_size];
        for p in 0..count {
            let page = PageId(p);
            let _generation = inner.wal.pin_generation();
            let v = inner.wal.version_for(page, r.snapshot);
            if v == Lsn::IN_DATABASE_FILE {
                inner
                    .db_file
                    .read_exact_at(&mut buf, p as u64 * inner.page_size as u64)
                    .map_err(|e| Error::io(format!("reading page {page}"), e))?;
                verify_page(&buf, page)?;
            } else {
                // Verified against its frame's checksum.
                inner.wal.read_page(page, v, &mut buf)?;
            }
            kinds[buf[8] as usize & 7] += 1;
        }
        // The free list: every entry a Free page, no cycle, and the count as recorded.
        let (mut next, recorded) = {
            let h = r.read_page(PageId::HEADER)?;
            (header::free_head(&h), header::free_count(&h))
        };
        let mut walked = 0u32;
        while !next.is_none() {
            if walked > count {
                return Err(Error::corrupt(PageId::HEADER, "free list has a cycle"));
            }
            let g = r.read_page(next)?;
            page::expect_kind(&g, next, PageKind::Free)?;
            next = PageId(read_u32(&g, header::FREE_NEXT_OFFSET));
            walked += 1;
        }
        if walked != recorded || kinds[PageKind::Free as usize] != walked as u64 {
            return Err(Error::corrupt(
                PageId::HEADER,
                format!(
                    "free list holds {walked} pages, header records {recorded}, {} pages are marked free",
                    kinds[PageKind::Free as usize]
                ),
            ));
        }
        Ok(kinds)
    }

    /// Checkpoints and closes. Fails (without harm) if transactions are still open in
    /// other threads; the store then closes when the last one ends.
    pub fn close(self) -> Result<()> {
        self.checkpoint()
    }
}

impl StoreCore {
    fn check_poison(&self) -> Result<()> {
        match &*self.poisoned.lock() {
            Some(_) => Err(Error::Closed(
                "an earlier write to the WAL failed; reopen the database to recover",
            )),
            None => Ok(()),
        }
    }

    fn poison(&self, why: &Error) {
        let mut p = self.poisoned.lock();
        if p.is_none() {
            *p = Some(why.to_string());
        }
    }

    /// Takes the write lock, waiting up to `timeout` for the writer that holds it.
    ///
    /// The lock is unfair for a short while: a commit under `off` or `normal` frees it
    /// without waking a parked waiter ([`Self::release_writer_lazily`]), so a client
    /// that begins its next transaction at once takes it again, and two clients taking
    /// turns at short transactions (TP1's take tens of microseconds) do not pay a
    /// futex wake, a context switch and a cold cache per commit — which made two
    /// clients slower than one. A waiter parks for at most [`WRITER_HANDOFF_AFTER`];
    /// then it becomes urgent, and the next release hands the lock to it (no other
    /// waiter takes a free lock while an urgent one waits).
    fn acquire_writer(&self, timeout: Duration) -> Result<()> {
        self.acquire_writer_as(timeout, false)
    }

    /// [`Self::acquire_writer`]; an `urgent` waiter (the background checkpointer) is
    /// urgent from the start, so that writers that keep taking the lock back cannot
    /// starve it (the WAL would grow past its threshold).
    fn acquire_writer_as(&self, timeout: Duration, urgent: bool) -> Result<()> {
        let start = Instant::now();
        let deadline = start + timeout;
        let handoff = start + WRITER_HANDOFF_AFTER;
        let mut urgent = urgent;
        if urgent {
            self.writer_urgent.fetch_add(1, Ordering::AcqRel);
        }
        let mut busy = self.writer_busy.lock();
        let blocked = |busy: bool, urgent: bool| busy || (!urgent && self.writer_urgent.load(Ordering::Acquire) > 0);
        let result = loop {
            if !blocked(*busy, urgent) {
                *busy = true;
                break Ok(());
            }
            let until = if urgent { deadline } else { handoff.min(deadline) };
            if self.writer_released.wait_until(&mut busy, until).timed_out() && blocked(*busy, urgent) {
                if Instant::now() >= deadline {
                    break Err(Error::WriterTimeout {
                        waited_ms: start.elapsed().as_millis() as u64,
                    });
                }
                if !urgent {
                    urgent = true;
                    self.writer_urgent.fetch_add(1, Ordering::AcqRel);
                }
            }
        };
        if urgent {
            self.writer_urgent.fetch_sub(1, Ordering::AcqRel);
            if result.is_err() {
                // Waiters held back for this one may take the lock now.
                drop(busy);
                self.writer_released.notify_all();
            }
        }
        result
    }

    /// Frees the write lock and wakes a waiter.
    fn release_writer(&self) {
        *self.writer_busy.lock() = false;
        self.wake_writers();
    }

    /// Frees the write lock, waking only an urgent waiter (see [`Self::acquire_writer`]):
    /// for the end of a commit that does not wait for a sync. A parked waiter that is
    /// not urgent yet wakes by itself within [`WRITER_HANDOFF_AFTER`].
    fn release_writer_lazily(&self) {
        *self.writer_busy.lock() = false;
        if self.writer_urgent.load(Ordering::Acquire) > 0 {
            self.writer_released.notify_all();
        }
    }

    fn wake_writers(&self) {
        // An urgent waiter may be parked behind others: wake them all so it is among
        // the woken (the others go back to sleep while it waits).
        if self.writer_urgent.load(Ordering::Acquire) > 0 {
            self.writer_released.notify_all();
        } else {
            self.writer_released.notify_one();
        }
    }

    /// The frame holding `page` as of `snapshot`, from the pool or from disk.
    fn read_committed(&self, page: PageId, snapshot: Lsn) -> Result<Frame> {
        let v = self.wal.version_for(page, snapshot);
        if let Some(f) = self.pool.get((page, v)) {
            return Ok(f);
        }
        let _generation = self.wal.pin_generation();
        let v = self.wal.version_for(page, snapshot);
        self.load_version(page, v)
    }

    /// Loads version `v` of `page` (a WAL frame, or the database file for `Lsn(0)`).
    /// The caller pins the WAL generation when `v` is a frame.
    fn load_version(&self, page: PageId, v: Lsn) -> Result<Frame> {
        self.pool.get_or_load((page, v), |buf| {
            if v == Lsn::IN_DATABASE_FILE {
                let off = page.0 as u64 * self.page_size as u64;
                self.db_file.read_exact_at(buf, off).map_err(|e| {
                    if e.kind() == std::io::ErrorKind::UnexpectedEof {
                        Error::corrupt(page, "page lies beyond the end of the database file")
                    } else {
                        Error::io(format!("reading page {page}"), e)
                    }
                })?;
                verify_page(buf, page)
            } else {
                // Verified against its frame's checksum (a WAL image's own checksum
                // field is stamped only when a checkpoint writes it to the file).
                self.wal.read_page(page, v, buf)
            }
        })
    }

    /// Drops superseded page versions from the pool (recycling their buffers) when no
    /// reader's snapshot predates the commit at `lsn` that superseded them. Without
    /// this, every commit would leave its pages' previous versions to age out of the
    /// pool, and new versions would keep faulting in fresh memory.
    fn retire_versions(&self, superseded: &[(PageId, Lsn)], lsn: Lsn) {
        let readers = self.readers.lock();
        // `visible` ≥ `lsn` here, so readers that register later see the new versions.
        if readers.keys().next().is_some_and(|&m| m < lsn.0) {
            return;
        }
        for &key in superseded {
            self.pool.invalidate(key);
        }
    }

    fn oldest_reader(&self) -> Option<u64> {
        self.readers.lock().keys().next().copied()
    }

    /// See [`Store::checkpoint`]; the caller holds the write lock.
    /// See [`Store::checkpoint`]; the caller holds the write lock and the checkpoint
    /// lock: backfills what is left and starts a new WAL generation if it can.
    fn checkpoint_locked(&self) -> Result<()> {
        let (committed, safe) = self.backfill()?;
        self.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
        let all_readers_current = self.oldest_reader().is_none_or(|m| m >= committed.0);
        if safe == committed && all_readers_current && self.wal.frame_count() > 0 {
            let newest = self.wal.newest_versions(committed);
            let limit = self.options.read().wal_size_limit;
            if let Err(e) = self.wal.reset(limit) {
                // The WAL's state is unknown now; recovery at the next open sorts it out.
                self.poison(&e);
                return Err(e);
            }
            // Each page's newest version is now its database-file version: rename the
            // cached frames instead of reading the pages back from the file.
            for (page, lsn) in newest {
                self.pool.rekey((page, lsn), (page, Lsn::IN_DATABASE_FILE));
            }
            self.stats.wal_resets.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The first half of a checkpoint, which needs no write lock (only the checkpoint
    /// lock): makes the committed frames durable and copies every page's newest version
    /// up to the oldest reader's snapshot into the database file, then syncs it. A writer
    /// may append meanwhile: only frames up to `committed`, read at the start, are
    /// touched, and no reader or writer resolves a page to its database-file version
    /// while a WAL version ≤ its snapshot exists. Returns (committed, safe).
    fn backfill(&self) -> Result<(Lsn, Lsn)> {
        self.check_poison()?;
        let committed = Lsn(self.committed.load(Ordering::Acquire));
        // Frames must be durable in the WAL before their pages overwrite the database
        // file, or a crash could leave the file ahead of the log.
        if let Err(e) = self.wal.sync_to(committed) {
            self.poison(&e);
            return Err(e);
        }
        self.visible.fetch_max(committed.0, Ordering::AcqRel);
        let safe = {
            let readers = self.readers.lock();
            Lsn(readers
                .keys()
                .next()
                .map_or(committed.0, |&m| m.min(committed.0)))
        };
        let backfilled = self.backfilled.load(Ordering::Acquire);
        let mut written = Vec::new();
        {
            let _generation = self.wal.pin_generation();
            // Each version is read from its WAL frame, not from the pool, and checked
            // against the frame's checksum before it is stamped with its own checksum
            // on its way to the file (commits do not seal pages): a pooled copy is
            // never verified after its commit, and sealing it would give a copy
            // damaged in memory a valid checksum in the file.
            let mut copy = vec![0u8; self.page_size];
            for (page, lsn) in self.wal.newest_versions(safe) {
                if lsn.0 <= backfilled {
                    continue;
                }
                self.wal.read_page(page, lsn, &mut copy)?;
                if page == PageId::HEADER {
                    // The file's copy of page 0 keeps naming this WAL (see `find_wal`).
                    header::set_wal_path(&mut copy, self.wal_path.as_os_str().as_encoded_bytes());
                }
                seal_page(&mut copy);
                self.db_file
                    .write_at(&copy, page.0 as u64 * self.page_size as u64)
                    .map_err(|e| Error::io(format!("checkpointing page {page}"), e))?;
                written.push(page);
            }
        }
        if !written.is_empty() {
            self.db_file
                .sync()
                .map_err(|e| Error::io("syncing the database file", e))?;
        }
        self.backfilled.fetch_max(safe.0, Ordering::AcqRel);
        for page in &written {
            self.pool.invalidate((*page, Lsn::IN_DATABASE_FILE));
        }
        Ok((committed, safe))
    }

    /// One round of the background checkpointer: the long part (WAL sync, backfill,
    /// database sync) runs while writers commit; then it queues for the write lock like a
    /// writer and finishes (the few frames committed meanwhile, and the WAL reset).
    fn checkpoint_in_background(&self) -> Result<()> {
        {
            let _checkpoint = self.checkpoint_lock.lock();
            self.backfill()?;
        }
        let timeout = self.options.read().writer_timeout;
        self.acquire_writer_as(timeout, true)?;
        let r = {
            let _checkpoint = self.checkpoint_lock.lock();
            self.checkpoint_locked()
        };
        self.release_writer();
        r
    }
}

/// Wakes the background checkpointer when the WAL has grown past the threshold.
#[derive(Default)]
struct CheckpointSignal {
    state: Mutex<CheckpointRequest>,
    wake: Condvar,
}

#[derive(Default)]
struct CheckpointRequest {
    wanted: bool,
    shutdown: bool,
}

/// The background checkpointer's loop; it exits when the last handle on the store is
/// dropped (`StoreInner::drop` tells it to, and waits).
fn run_checkpointer(core: Arc<StoreCore>, signal: Arc<CheckpointSignal>) {
    loop {
        {
            let mut req = signal.state.lock();
            while !req.wanted && !req.shutdown {
                signal.wake.wait(&mut req);
            }
            if req.shutdown {
                return;
            }
            req.wanted = false;
        }
        if core.checkpoint_in_background().is_err() {
            core.stats
                .checkpoint_failures
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// What handles and transactions hold: the shared core, and the checkpointer thread,
/// which is stopped and joined when the last of them goes, so that dropping a store
/// closes its files before the drop returns.
struct StoreInner {
    core: Arc<StoreCore>,
    checkpointer_thread: Option<std::thread::JoinHandle<()>>,
}

impl std::ops::Deref for StoreInner {
    type Target = StoreCore;
    fn deref(&self) -> &StoreCore {
        &self.core
    }
}

impl Drop for StoreInner {
    fn drop(&mut self) {
        if let (Some(signal), Some(thread)) =
            (&self.core.checkpointer, self.checkpointer_thread.take())
        {
            signal.state.lock().shutdown = true;
            signal.wake.notify_one();
            let _ = thread.join();
        }
    }
}

impl Drop for StoreCore {
    fn drop(&mut self) {
        // A clean close leaves an empty WAL. Errors cannot be reported from here; the
        // WAL still holds everything, and the next open recovers it.
        if self.poisoned.lock().is_none()
            && self.wal.frame_count() > 0
            && !self.options.read().read_only
        {
            let _ = self.checkpoint_locked();
        }
    }
}

/// A read-only transaction: a consistent snapshot that never blocks and is never
/// blocked.
pub struct ReadTxn {
    inner: Arc<StoreInner>,
    snapshot: Lsn,
}

impl ReadTxn {
    pub fn snapshot(&self) -> Lsn {
        self.snapshot
    }

    /// Application root slot `slot` (0..8) as of this snapshot.
    pub fn root(&self, slot: usize) -> Result<u64> {
        read_root(self, slot)
    }

    /// Number of pages in the database as of this snapshot.
    pub fn page_count(&self) -> Result<u32> {
        read_page_count(self)
    }
}

impl Drop for ReadTxn {
    fn drop(&mut self) {
        let mut readers = self.inner.readers.lock();
        if let Some(n) = readers.get_mut(&self.snapshot.0) {
            *n -= 1;
            if *n == 0 {
                readers.remove(&self.snapshot.0);
            }
        }
    }
}

impl PageRead for ReadTxn {
    fn read_page(&self, id: PageId) -> Result<PageReadGuard> {
        let frame = self.inner.read_committed(id, self.snapshot)?;
        Ok(PageReadGuard::new(id, &frame))
    }

    fn prefetch_page(&self, id: PageId) {
        self.inner.pool.prefetch((id, self.inner.wal.version_for(id, self.snapshot)));
    }

    fn page_size(&self) -> usize {
        self.inner.page_size
    }
}

fn read_root(r: &impl PageRead, slot: usize) -> Result<u64> {
    if slot >= ROOT_SLOTS {
        return Err(Error::InvalidArgument(format!(
            "root slot {slot} out of range"
        )));
    }
    let h = r.read_page(PageId::HEADER)?;
    Ok(header::root(&h, slot))
}

fn read_page_count(r: &impl PageRead) -> Result<u32> {
    let h = r.read_page(PageId::HEADER)?;
    Ok(header::page_count(&h))
}

#[derive(Default)]
struct WriteState {
    /// Private copies of the pages this transaction changed.
    dirty: HashMap<PageId, Frame>,
    /// Pages spilled to the WAL (uncommitted frames) and not in `dirty`.
    spilled: HashMap<PageId, Lsn>,
    /// Every spilled frame in order (a page may have been spilled more than once).
    spill_log: Vec<(PageId, Lsn)>,
    /// Open savepoints, oldest first (see [`WriteTxn::savepoint`]).
    savepoints: Vec<SavepointUndo>,
}

/// What a page was in the transaction just before its first change after a savepoint.
/// Everything else a transaction holds (roots, page count, free list) lives in pages,
/// so restoring these states restores all of it.
enum PriorPage {
    /// Not yet changed by the transaction: its committed version (or, beyond the
    /// committed page count, nothing).
    Committed,
    /// Spilled to the WAL as this frame, with no private copy.
    Spilled(Lsn),
    /// A private copy with this image.
    Private(PageBuf),
}

/// The undo record of one savepoint: the prior state of every page changed since it
/// was set (and before a newer savepoint was set), so rolling back costs only the
/// pages changed after the savepoint.
struct SavepointUndo {
    pages: HashMap<PageId, PriorPage>,
    /// `spill_log.len()` when the savepoint was set: frames spilled after it belong to
    /// the transaction in the WAL whatever happens to the savepoint.
    spills_before: usize,
}

/// The one write transaction. Changes are invisible to everyone else until
/// [`WriteTxn::commit`]; dropping it without committing rolls back.
///
/// A `WriteTxn` is meant for one thread at a time: page latches are not reentrant.
pub struct WriteTxn {
    inner: Arc<StoreInner>,
    txn: TxnId,
    base: Lsn,
    state: Mutex<WriteState>,
    finished: bool,
}

impl WriteTxn {
    pub fn id(&self) -> TxnId {
        self.txn
    }

    /// The committed state this transaction started from: a reader whose snapshot is
    /// older than this has missed a commit.
    pub fn base(&self) -> Lsn {
        self.base
    }

    pub fn root(&self, slot: usize) -> Result<u64> {
        read_root(self, slot)
    }

    pub fn set_root(&self, slot: usize, value: u64) -> Result<()> {
        if slot >= ROOT_SLOTS {
            return Err(Error::InvalidArgument(format!(
                "root slot {slot} out of range"
            )));
        }
        let mut h = self.write_page(PageId::HEADER)?;
        header::set_root(&mut h, slot, value);
        Ok(())
    }

    pub fn page_count(&self) -> Result<u32> {
        read_page_count(self)
    }

    /// Pages on the free list.
    pub fn free_page_count(&self) -> Result<u32> {
        let h = self.read_page(PageId::HEADER)?;
        Ok(header::free_count(&h))
    }

    /// The private copy of `page`, about to be changed: under a savepoint, its prior
    /// state is recorded first (one lock for both, as this is every write's path).
    fn private_frame_for_change(&self, page: PageId) -> Option<Frame> {
        let mut st = self.state.lock();
        if !st.savepoints.is_empty() {
            self.note_prior(&mut st, page);
        }
        st.dirty.get(&page).cloned()
    }

    /// Sets a savepoint: [`WriteTxn::rollback_to_savepoint`] with the returned number
    /// brings every page (and so the roots, page count and free list) back to their
    /// state now. Savepoints nest; the number is the savepoint's depth (0 for the
    /// outermost).
    pub fn savepoint(&self) -> Result<usize> {
        if self.finished {
            return Err(Error::TransactionClosed("already committed or rolled back"));
        }
        let mut st = self.state.lock();
        let spills_before = st.spill_log.len();
        st.savepoints.push(SavepointUndo {
            pages: HashMap::default(),
            spills_before,
        });
        Ok(st.savepoints.len() - 1)
    }

    /// Open savepoints.
    pub fn savepoint_count(&self) -> usize {
        self.state.lock().savepoints.len()
    }

    /// Brings the transaction back to savepoint `index`, which stays set (with nothing
    /// to undo); the savepoints set after it are gone. Costs the pages changed since
    /// the savepoint. No page guard of this transaction may be held.
    pub fn rollback_to_savepoint(&self, index: usize) -> Result<()> {
        if self.finished {
            return Err(Error::TransactionClosed("already committed or rolled back"));
        }
        let mut st = self.state.lock();
        if index >= st.savepoints.len() {
            return Err(Error::InvalidArgument(format!(
                "no savepoint {index} (there are {})",
                st.savepoints.len()
            )));
        }
        let undone = st.savepoints.split_off(index);
        let spills_before = undone[0].spills_before;
        // Newest first, so a page changed under several savepoints ends in the state
        // the oldest of them recorded.
        for savepoint in undone.into_iter().rev() {
            for (page, prior) in savepoint.pages {
                match prior {
                    PriorPage::Committed => {
                        st.dirty.remove(&page);
                        st.spilled.remove(&page);
                    }
                    PriorPage::Spilled(lsn) => {
                        st.dirty.remove(&page);
                        st.spilled.insert(page, lsn);
                    }
                    PriorPage::Private(image) => {
                        st.spilled.remove(&page);
                        st.dirty.insert(page, Arc::new(RwLock::new(image)));
                    }
                }
            }
        }
        // Frames spilled since the savepoint stay in the WAL as frames of this
        // transaction, and recovery applies every frame of a committed transaction, the
        // newest of a page winning. So each page spilled since must be written again
        // at commit, after them: give it a private copy of its restored state.
        let respilled: Vec<PageId> = st.spill_log[spills_before..].iter().map(|&(p, _)| p).collect();
        let mut base_page_count = None;
        for page in respilled {
            if st.dirty.contains_key(&page) {
                continue;
            }
            let mut copy = self.inner.pool.take_buffer(page);
            if let Some(lsn) = st.spilled.remove(&page) {
                let _generation = self.inner.wal.pin_generation();
                copy.copy_from_slice(&self.inner.load_version(page, lsn)?.read());
            } else {
                let count = match base_page_count {
                    Some(count) => count,
                    None => {
                        let h = self.inner.read_committed(PageId::HEADER, self.base)?;
                        let count = header::page_count(&h.read());
                        base_page_count = Some(count);
                        count
                    }
                };
                if page.0 < count {
                    copy.copy_from_slice(&self.inner.read_committed(page, self.base)?.read());
                } else {
                    // Allocated after the savepoint, beyond the page count it restores:
                    // a free page, so the spilled image is never taken for data.
                    format_page(&mut copy, page, PageKind::Free);
                }
            }
            st.dirty.insert(page, Arc::new(RwLock::new(copy)));
        }
        let spills_before = st.spill_log.len();
        st.savepoints.push(SavepointUndo {
            pages: HashMap::default(),
            spills_before,
        });
        self.maybe_spill(&mut st)
    }

    /// Forgets savepoint `index` and those set after it, keeping their changes: they
    /// become changes since the savepoint before it, if any.
    pub fn release_savepoint(&self, index: usize) -> Result<()> {
        let mut st = self.state.lock();
        if index >= st.savepoints.len() {
            return Err(Error::InvalidArgument(format!(
                "no savepoint {index} (there are {})",
                st.savepoints.len()
            )));
        }
        let released = st.savepoints.split_off(index);
        if let Some(parent) = st.savepoints.last_mut() {
            // Oldest first: a page's earliest recorded state is its state at the parent
            // unless the parent recorded one itself.
            for savepoint in released {
                for (page, prior) in savepoint.pages {
                    parent.pages.entry(page).or_insert(prior);
                }
            }
        }
        Ok(())
    }

    /// Records `page`'s state in the newest savepoint before its first change since.
    fn note_prior(&self, st: &mut WriteState, page: PageId) {
        let Some(top) = st.savepoints.last_mut() else {
            return;
        };
        if top.pages.contains_key(&page) {
            return;
        }
        let prior = if let Some(frame) = st.dirty.get(&page) {
            PriorPage::Private(self.inner.pool.copy_of(page, &frame.read()))
        } else if let Some(&lsn) = st.spilled.get(&page) {
            PriorPage::Spilled(lsn)
        } else {
            PriorPage::Committed
        };
        top.pages.insert(page, prior);
    }

    /// Spills unpinned private pages to the WAL when there are too many.
    fn maybe_spill(&self, st: &mut WriteState) -> Result<()> {
        let max = self.inner.options.read().writer_dirty_pages_max.max(16);
        if st.dirty.len() <= max {
            return Ok(());
        }
        let mut victims: Vec<(PageId, PageBuf)> = Vec::new();
        let mut ids: Vec<PageId> = st
            .dirty
            .iter()
            .filter(|(_, f)| Arc::strong_count(f) == 1)
            .map(|(&p, _)| p)
            .collect();
        ids.sort_unstable();
        ids.truncate(max / 2);
        for p in ids {
            if let Some(frame) = st.dirty.remove(&p) {
                let buf = match Arc::try_unwrap(frame) {
                    Ok(lock) => lock.into_inner(),
                    Err(frame) => {
                        st.dirty.insert(p, frame);
                        continue;
                    }
                };
                victims.push((p, buf));
            }
        }
        if victims.is_empty() {
            return Ok(());
        }
        let writes: Vec<FrameWrite<'_>> = victims
            .iter()
            .map(|(p, b)| FrameWrite { page: *p, image: b, base: None })
            .collect();
        let lsns = match self.inner.wal.append(self.txn, &writes, None) {
            Ok(l) => l,
            Err(e) => {
                self.inner.poison(&e);
                return Err(e);
            }
        };
        drop(writes);
        self.inner
            .stats
            .pages_spilled
            .fetch_add(lsns.len() as u64, Ordering::Relaxed);
        for ((p, buf), lsn) in victims.into_iter().zip(lsns) {
            st.spilled.insert(p, lsn);
            st.spill_log.push((p, lsn));
            // Keep the image cached under its frame LSN; nobody else asks for it.
            let _ = self.inner.pool.insert((p, lsn), buf);
        }
        Ok(())
    }

    /// Current content of `page` for this transaction (private, spilled or committed).
    fn current_frame(&self, page: PageId) -> Result<Frame> {
        let spilled = {
            let st = self.state.lock();
            if let Some(f) = st.dirty.get(&page) {
                return Ok(f.clone());
            }
            st.spilled.get(&page).copied()
        };
        match spilled {
            Some(lsn) => {
                let _generation = self.inner.wal.pin_generation();
                self.inner.load_version(page, lsn)
            }
            None => self.inner.read_committed(page, self.base),
        }
    }

    fn insert_private(&self, page: PageId, buf: PageBuf) -> Result<PageWriteGuard> {
        let frame: Frame = Arc::new(RwLock::new(buf));
        let guard = PageWriteGuard::new(page, &frame);
        let mut st = self.state.lock();
        st.spilled.remove(&page);
        st.dirty.insert(page, frame);
        self.maybe_spill(&mut st)?;
        Ok(guard)
    }

    /// Commits: logs the changed pages, makes them durable as `synchronous` says, and
    /// publishes them to new readers.
    pub fn commit(mut self) -> Result<()> {
        self.finished = true;
        let inner = self.inner.clone();
        let result = self.commit_inner();
        if result.is_err() {
            inner.stats.rollbacks.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    fn commit_inner(&mut self) -> Result<()> {
        let inner = self.inner.clone();
        let mut st = std::mem::take(&mut *self.state.lock());
        if st.dirty.is_empty() && st.spilled.is_empty() {
            inner.release_writer();
            return Ok(());
        }
        if let Err(e) = inner.check_poison() {
            inner.release_writer();
            return Err(e);
        }
        // The last frame carries COMMIT, so at least one page must be written now.
        if st.dirty.is_empty() {
            let (&p, &lsn) = st.spilled.iter().next().expect("spilled is not empty");
            let frame = {
                let _generation = inner.wal.pin_generation();
                inner.load_version(p, lsn)
            };
            match frame {
                Ok(f) => {
                    let copy = f.read().clone();
                    st.spilled.remove(&p);
                    st.dirty.insert(p, Arc::new(RwLock::new(copy)));
                }
                Err(e) => {
                    inner.release_writer();
                    return Err(e);
                }
            }
        }
        let mut pages: Vec<(PageId, PageBuf)> = Vec::with_capacity(st.dirty.len());
        for (p, frame) in st.dirty.drain() {
            match Arc::try_unwrap(frame) {
                Ok(lock) => pages.push((p, lock.into_inner())),
                Err(_) => {
                    inner.release_writer();
                    return Err(Error::InvalidArgument(format!(
                        "commit while a guard on page {p} is still held"
                    )));
                }
            }
        }
        // Header last: its page count is the one recorded in the COMMIT frame.
        pages.sort_unstable_by_key(|(p, _)| (*p == PageId::HEADER, *p));
        let page_count = match pages.iter().find(|(p, _)| *p == PageId::HEADER) {
            Some((_, h)) => header::page_count(h),
            None => match inner.read_committed(PageId::HEADER, self.base) {
                Ok(f) => header::page_count(&f.read()),
                Err(e) => {
                    inner.release_writer();
                    return Err(e);
                }
            },
        };
        // Each page's newest committed version: the one this commit supersedes, and the
        // base its frame may be a delta against while the pool holds its image (the
        // transaction copied the page from it, so it is usually there).
        let prev: Vec<Lsn> = pages
            .iter()
            .map(|(p, _)| inner.wal.version_for(*p, self.base))
            .collect();
        let base_frames: Vec<Option<Frame>> = pages
            .iter()
            .zip(&prev)
            .map(|((p, _), &v)| {
                if v == Lsn::IN_DATABASE_FILE {
                    None
                } else {
                    inner.pool.get((*p, v))
                }
            })
            .collect();
        let base_images: Vec<Option<parking_lot::RwLockReadGuard<'_, PageBuf>>> =
            base_frames.iter().map(|f| f.as_ref().map(|f| f.read())).collect();
        let writes: Vec<FrameWrite<'_>> = pages
            .iter()
            .zip(&prev)
            .zip(&base_images)
            .map(|(((p, b), &v), base)| FrameWrite {
                page: *p,
                image: b,
                base: base.as_ref().map(|g| (v, &g[..])),
            })
            .collect();
        let lsns = match inner.wal.append(self.txn, &writes, Some(page_count)) {
            Ok(l) => l,
            Err(e) => {
                inner.poison(&e);
                inner.release_writer();
                return Err(e);
            }
        };
        drop(writes);
        drop(base_images);
        drop(base_frames);
        let last = *lsns.last().expect("at least one frame");
        // Publish: spilled pages not rewritten since, then this batch (ascending LSNs).
        let mut published: Vec<(PageId, Lsn)> = st.spilled.iter().map(|(&p, &l)| (p, l)).collect();
        published.sort_unstable_by_key(|&(_, l)| l);
        published.extend(pages.iter().map(|(p, _)| *p).zip(lsns.iter().copied()));
        // The versions these pages had before: garbage once no reader needs them.
        let superseded: Vec<(PageId, Lsn)> = st
            .spilled
            .keys()
            .map(|&p| (p, inner.wal.version_for(p, self.base)))
            .chain(pages.iter().map(|(p, _)| *p).zip(prev.iter().copied()))
            .collect();
        inner.wal.publish(&published);
        inner.committed.store(last.0, Ordering::Release);
        inner
            .stats
            .frames_written
            .fetch_add(lsns.len() as u64, Ordering::Relaxed);
        inner.stats.commits.fetch_add(1, Ordering::Relaxed);
        for ((p, buf), lsn) in pages.into_iter().zip(lsns) {
            let _ = inner.pool.insert((p, lsn), buf);
        }

        let (mode, checkpoint_frames) = {
            let o = inner.options.read();
            (o.synchronous, o.checkpoint_frames)
        };
        let wal_full = inner.wal.frame_count() > checkpoint_frames;
        // With a background checkpointer the commit only wakes it; otherwise the commit
        // that fills the WAL checkpoints inline, holding the write lock.
        let inline_checkpoint = wal_full && inner.checkpointer.is_none();
        if wal_full && let Some(signal) = &inner.checkpointer {
            signal.state.lock().wanted = true;
            signal.wake.notify_one();
        }
        if mode == Synchronous::Full && !inline_checkpoint {
            // Group commit: let the next writer in while we wait for the sync.
            inner.release_writer();
            if let Err(e) = inner.wal.sync_to(last) {
                inner.poison(&e);
                return Err(e);
            }
            inner.visible.fetch_max(last.0, Ordering::AcqRel);
            inner.retire_versions(&superseded, last);
            return Ok(());
        }
        if mode == Synchronous::Full
            && let Err(e) = inner.wal.sync_to(last)
        {
            inner.poison(&e);
            inner.release_writer();
            return Err(e);
        }
        inner.visible.fetch_max(last.0, Ordering::AcqRel);
        inner.retire_versions(&superseded, last);
        if inline_checkpoint {
            let _checkpoint = inner.checkpoint_lock.lock();
            // The commit itself succeeded; a failed checkpoint is retried next time (and
            // poisons the store if it was an I/O failure).
            let _ = inner.checkpoint_locked();
        }
        // The committer usually begins its next transaction at once (see
        // `acquire_writer`); a waiter gets the lock at most `WRITER_HANDOFF_AFTER` later.
        inner.release_writer_lazily();
        Ok(())
    }

    /// Throws away every change of this transaction.
    pub fn rollback(mut self) {
        self.finish_rollback();
    }

    fn finish_rollback(&mut self) {
        if !self.finished {
            self.finished = true;
            *self.state.lock() = WriteState::default();
            self.inner.stats.rollbacks.fetch_add(1, Ordering::Relaxed);
            self.inner.release_writer();
        }
    }
}

impl Drop for WriteTxn {
    fn drop(&mut self) {
        self.finish_rollback();
    }
}

impl PageRead for WriteTxn {
    fn read_page(&self, id: PageId) -> Result<PageReadGuard> {
        let frame = self.current_frame(id)?;
        Ok(PageReadGuard::new(id, &frame))
    }

    fn page_size(&self) -> usize {
        self.inner.page_size
    }
}

impl PageWrite for WriteTxn {
    fn write_page(&self, id: PageId) -> Result<PageWriteGuard> {
        if self.finished {
            return Err(Error::TransactionClosed("already committed or rolled back"));
        }
        if let Some(f) = self.private_frame_for_change(id) {
            return Ok(PageWriteGuard::new(id, &f));
        }
        let copy = {
            let src = self.current_frame(id)?;
            self.inner.pool.copy_of(id, &src.read())
        };
        self.insert_private(id, copy)
    }

    fn allocate_page(&self) -> Result<PageWriteGuard> {
        let mut hdr = self.write_page(PageId::HEADER)?;
        let head = header::free_head(&hdr);
        if !head.is_none() {
            let next = {
                let free = self.read_page(head)?;
                page::expect_kind(&free, head, PageKind::Free)?;
                PageId(read_u32(&free, header::FREE_NEXT_OFFSET))
            };
            header::set_free_head(&mut hdr, next);
            let count = header::free_count(&hdr);
            header::set_free_count(&mut hdr, count.saturating_sub(1));
            drop(hdr);
            let mut g = self.write_page(head)?;
            format_page(&mut g, head, PageKind::Free);
            return Ok(g);
        }
        let count = header::page_count(&hdr);
        if count == u32::MAX {
            return Err(Error::TooLarge {
                what: "database",
                size: count as usize,
                limit: u32::MAX as usize - 1,
            });
        }
        header::set_page_count(&mut hdr, count + 1);
        drop(hdr);
        let id = PageId(count);
        self.note_prior(&mut self.state.lock(), id);
        let mut buf = vec![0u8; self.inner.page_size].into_boxed_slice();
        format_page(&mut buf, id, PageKind::Free);
        self.insert_private(id, buf)
    }

    fn free_page(&self, id: PageId) -> Result<()> {
        if id == PageId::HEADER {
            return Err(Error::InvalidArgument(
                "the header page cannot be freed".into(),
            ));
        }
        let mut hdr = self.write_page(PageId::HEADER)?;
        if id.0 >= header::page_count(&hdr) {
            return Err(Error::corrupt(
                id,
                "freeing a page beyond the end of the database",
            ));
        }
        let mut g = self.write_page(id)?;
        if page::page_kind(&g) == Some(PageKind::Free) {
            return Err(Error::corrupt(id, "page freed twice"));
        }
        format_page(&mut g, id, PageKind::Free);
        write_u32(&mut g, header::FREE_NEXT_OFFSET, header::free_head(&hdr).0);
        header::set_free_head(&mut hdr, id);
        let count = header::free_count(&hdr);
        header::set_free_count(&mut hdr, count + 1);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{PageRead, PageWrite};
    use crate::page::{PAGE_HEADER_SIZE, PageKind, format_page, read_u64, write_u64};

    /// A checkpoint writes each page as its WAL frame holds it, checked against the
    /// frame's checksum, not the pool's copy: a pooled copy damaged in memory after its
    /// commit would otherwise be sealed into the database file with a valid checksum.
    #[test]
    fn a_checkpoint_writes_the_logged_page_not_a_pooled_copy() {
        let fs = MemFileSystem::new();
        let options = StoreOptions { page_size: 4096, background_checkpoint: false, ..StoreOptions::default() };
        let (store, _) = Store::open_with(&fs, Path::new("db"), options.clone()).unwrap();
        let w = store.begin_write().unwrap();
        let id = {
            let mut g = w.allocate_page().unwrap();
            let id = g.id();
            format_page(&mut g, id, PageKind::Heap);
            write_u64(&mut g, PAGE_HEADER_SIZE, 77);
            id
        };
        w.commit().unwrap();
        let lsn = store.inner.wal.version_for(id, Lsn(u64::MAX / 8));
        assert_ne!(lsn, Lsn::IN_DATABASE_FILE);
        let pooled = store.inner.pool.get((id, lsn)).expect("the committed version is in the pool");
        pooled.write()[PAGE_HEADER_SIZE] ^= 0xFF;
        drop(pooled);
        store.checkpoint().unwrap();
        store.close().unwrap();
        let (store, _) = Store::open_with(&fs, Path::new("db"), options).unwrap();
        assert_eq!(read_u64(&store.begin_read().read_page(id).unwrap(), PAGE_HEADER_SIZE), 77);
    }
}
