//! Behaviour of the store: transactions, snapshots, recovery, and clear errors for bad
//! files. Page contents here are raw bytes; access methods have their own tests.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use beedb_storage::file::{FaultConfig, FaultFileSystem, FileSystem, MemFileSystem, OpenOptions};
use beedb_storage::page::{PAGE_HEADER_SIZE, PageKind, format_page, read_u64, write_u64};
use beedb_storage::{Error, PageId, PageRead, PageWrite, Store, StoreOptions, Synchronous};

fn opts() -> StoreOptions {
    StoreOptions {
        page_size: 4096,
        ..StoreOptions::default()
    }
}

fn open(fs: &dyn FileSystem, o: StoreOptions) -> Store {
    Store::open_with(fs, Path::new("db"), o).unwrap().0
}

/// Allocates a page holding `value` at the start of its body.
fn new_page(w: &beedb_storage::WriteTxn, value: u64) -> PageId {
    let mut g = w.allocate_page().unwrap();
    let id = g.id();
    format_page(&mut g, id, PageKind::Heap);
    write_u64(&mut g, PAGE_HEADER_SIZE, value);
    id
}

fn set_value(w: &beedb_storage::WriteTxn, id: PageId, value: u64) {
    let mut g = w.write_page(id).unwrap();
    write_u64(&mut g, PAGE_HEADER_SIZE, value);
}

fn value(r: &impl PageRead, id: PageId) -> u64 {
    read_u64(&r.read_page(id).unwrap(), PAGE_HEADER_SIZE)
}

#[test]
fn committed_pages_survive_reopen_and_rolled_back_do_not() {
    let fs = MemFileSystem::new();
    let (a, b);
    {
        let store = open(&fs, opts());
        let w = store.begin_write().unwrap();
        a = new_page(&w, 11);
        w.set_root(0, a.0 as u64).unwrap();
        w.commit().unwrap();
        let w = store.begin_write().unwrap();
        b = new_page(&w, 22);
        set_value(&w, a, 99);
        w.rollback();
        assert_eq!(value(&store.begin_read(), a), 11);
        store.close().unwrap();
    }
    let store = open(&fs, opts());
    let r = store.begin_read();
    assert_eq!(r.root(0).unwrap(), a.0 as u64);
    assert_eq!(value(&r, a), 11);
    // The rolled-back allocation did not happen: the next allocation reuses its id.
    drop(r);
    let w = store.begin_write().unwrap();
    assert_eq!(new_page(&w, 1), b);
}

#[test]
fn reader_keeps_its_snapshot_while_writer_commits() {
    let fs = MemFileSystem::new();
    let store = open(&fs, opts());
    let w = store.begin_write().unwrap();
    let p = new_page(&w, 1);
    w.commit().unwrap();
    let old = store.begin_read();
    for v in 2..50 {
        let w = store.begin_write().unwrap();
        set_value(&w, p, v);
        w.commit().unwrap();
        // Checkpoints may run; the old snapshot must stay intact.
        store.checkpoint().unwrap();
    }
    assert_eq!(value(&old, p), 1);
    assert_eq!(value(&store.begin_read(), p), 49);
    drop(old);
    store.checkpoint().unwrap();
    assert_eq!(value(&store.begin_read(), p), 49);
}

#[test]
fn second_writer_waits_then_times_out_with_clear_error() {
    let store = open(&MemFileSystem::new(), opts());
    let w = store.begin_write().unwrap();
    let err = match store.begin_write_timeout(Duration::from_millis(50)) {
        Err(e) => e,
        Ok(_) => panic!("second writer got in"),
    };
    assert!(matches!(err, Error::WriterTimeout { .. }), "{err}");
    assert!(err.to_string().contains("waiting for the write lock"));
    // A waiting writer gets in as soon as the first one finishes.
    let s2 = store.clone();
    let t = std::thread::spawn(move || s2.begin_write_timeout(Duration::from_secs(10)).map(|_| ()));
    std::thread::sleep(Duration::from_millis(50));
    w.commit().unwrap();
    t.join().unwrap().unwrap();
}

#[test]
fn large_transaction_spills_and_still_commits_or_rolls_back() {
    let fs = MemFileSystem::new();
    let mut o = opts();
    o.writer_dirty_pages_max = 16;
    let store = open(&fs, o.clone());
    let w = store.begin_write().unwrap();
    let ids: Vec<PageId> = (0..500).map(|i| new_page(&w, i)).collect();
    for (i, &id) in ids.iter().enumerate().step_by(7) {
        set_value(&w, id, 1000 + i as u64);
    }
    w.commit().unwrap();
    assert!(store.stats().pages_spilled.load(Ordering::Relaxed) > 0);
    let check = |store: &Store| {
        let r = store.begin_read();
        for (i, &id) in ids.iter().enumerate() {
            let want = if i % 7 == 0 {
                1000 + i as u64
            } else {
                i as u64
            };
            assert_eq!(value(&r, id), want);
        }
    };
    check(&store);
    // A big rollback leaves spilled garbage in the WAL that recovery must skip.
    let w = store.begin_write().unwrap();
    for &id in &ids {
        set_value(&w, id, 7);
    }
    w.rollback();
    check(&store);
    drop(store);
    check(&open(&fs, o));
}

#[test]
fn second_open_of_same_file_is_refused() {
    let fs = MemFileSystem::new();
    let _a = open(&fs, opts());
    let err = Store::open_with(&fs, Path::new("db"), opts())
        .err()
        .unwrap();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
}

#[test]
fn not_a_database_newer_format_and_truncated_are_reported() {
    let fs = FaultFileSystem::new();
    fs.set_file_bytes(Path::new("text"), b"hello, this is not a database at all, just some text that is long enough to read 64 bytes".to_vec());
    let err = Store::open_with(&fs, Path::new("text"), opts())
        .err()
        .unwrap();
    assert!(matches!(err, Error::NotADatabase { .. }), "{err}");

    {
        let store = open(&fs, opts());
        let w = store.begin_write().unwrap();
        for i in 0..10 {
            new_page(&w, i);
        }
        w.commit().unwrap();
        store.close().unwrap();
    }
    let good = fs.file_bytes(Path::new("db")).unwrap();
    let mut newer = good.clone();
    newer[32] = 99; // format version
    fs.set_file_bytes(Path::new("db"), newer);
    let err = Store::open_with(&fs, Path::new("db"), opts())
        .err()
        .unwrap();
    assert!(matches!(err, Error::NewerFormat { found: 99, .. }), "{err}");

    fs.set_file_bytes(Path::new("db"), good[..4096 * 5].to_vec());
    let err = Store::open_with(&fs, Path::new("db"), opts())
        .err()
        .unwrap();
    assert!(matches!(err, Error::Truncated { .. }), "{err}");
}

#[test]
fn flipped_bit_in_data_page_is_reported_with_page_number() {
    let fs = FaultFileSystem::new();
    let ids: Vec<PageId>;
    {
        let store = open(&fs, opts());
        let w = store.begin_write().unwrap();
        ids = (0..5).map(|i| new_page(&w, i)).collect();
        w.commit().unwrap();
        store.close().unwrap();
    }
    let mut bytes = fs.file_bytes(Path::new("db")).unwrap();
    let victim = ids[3];
    bytes[victim.0 as usize * 4096 + 1000] ^= 0x10;
    fs.set_file_bytes(Path::new("db"), bytes);
    let store = open(&fs, opts());
    let r = store.begin_read();
    assert_eq!(value(&r, ids[2]), 2);
    let err = r.read_page(victim).err().unwrap();
    assert!(
        matches!(err, Error::CorruptPage { page, .. } if page == victim),
        "{err}"
    );
    assert!(err.to_string().contains(&format!("page {victim}")));
}

#[test]
fn flipped_bit_in_durable_wal_frame_is_reported_not_dropped() {
    let fs = FaultFileSystem::new();
    let mut o = opts();
    o.checkpoint_frames = u64::MAX;
    {
        let store = open(&fs, o.clone());
        let w = store.begin_write().unwrap();
        let p = new_page(&w, 1);
        w.commit().unwrap();
        for v in 0..5 {
            let w = store.begin_write().unwrap();
            set_value(&w, p, v);
            w.commit().unwrap();
        }
        // Crash without a clean close: the WAL keeps the frames.
        fs.crash();
    }
    fs.restart(1);
    let mut wal = fs.file_bytes(Path::new("db-wal")).unwrap();
    // Frame 0 starts at byte 512; its stored length is the page minus its elided hole
    // (header bytes 56..60), rounded up with its 64-byte header to 512 bytes.
    let frame0 = 512usize;
    let hole = u32::from_le_bytes(wal[frame0 + 56..frame0 + 60].try_into().unwrap()) as usize;
    let frame1 = frame0 + (64 + 4096 - hole).div_ceil(512) * 512;
    assert_eq!(
        u64::from_le_bytes(wal[frame1..frame1 + 8].try_into().unwrap()),
        u64::from_le_bytes(wal[frame0..frame0 + 8].try_into().unwrap()) + 1,
        "frame 1 found"
    );
    // Flip a bit in the second frame's page image (its page-id field).
    wal[frame1 + 64 + 5] ^= 1;
    fs.set_file_bytes(Path::new("db-wal"), wal);
    let err = Store::open_with(&fs, Path::new("db"), o).err().unwrap();
    assert!(matches!(err, Error::CorruptWal { frame: 1, .. }), "{err}");
}

#[test]
fn full_mode_commit_is_durable_across_power_cut() {
    for seed in 0..20 {
        let fs = FaultFileSystem::new();
        let mut o = opts();
        o.synchronous = Synchronous::Full;
        let p;
        {
            let store = open(&fs, o.clone());
            let w = store.begin_write().unwrap();
            p = new_page(&w, 5);
            w.commit().unwrap();
            let w = store.begin_write().unwrap();
            set_value(&w, p, 6);
            w.commit().unwrap();
            // An unacknowledged change in flight.
            let w = store.begin_write().unwrap();
            set_value(&w, p, 7);
            fs.crash();
            let _ = w.commit();
        }
        fs.restart(seed);
        let store = open(&fs, o.clone());
        assert_eq!(value(&store.begin_read(), p), 6, "seed {seed}");
    }
}

#[test]
fn readers_run_concurrently_with_writer_and_see_consistent_sums() {
    // Money transfers between accounts, one per page: every snapshot sums to the total.
    // Checkpoints run every few commits and a tiny pool forces evictions, so readers
    // race with backfills, WAL resets and reloads.
    let mut o = opts();
    o.checkpoint_frames = 16;
    o.cache_size_bytes = 64 * 4096;
    // Inline checkpoints, so WAL resets are certain to happen during the run (the
    // background checkpointer may not get the CPU in time on a loaded machine; the
    // crash tests exercise it).
    o.background_checkpoint = false;
    let store = open(&MemFileSystem::new(), o);
    let w = store.begin_write().unwrap();
    let accounts: Vec<PageId> = (0..20).map(|_| new_page(&w, 100)).collect();
    w.commit().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for _ in 0..2 {
        let store = store.clone();
        let accounts = accounts.clone();
        let stop = stop.clone();
        readers.push(std::thread::spawn(move || {
            let mut checks = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let r = store.begin_read();
                let sum: u64 = accounts.iter().map(|&a| value(&r, a)).sum();
                assert_eq!(sum, 2000);
                checks += 1;
            }
            checks
        }));
    }
    let mut state = 1u64;
    for _ in 0..2000 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let from = accounts[(state >> 33) as usize % accounts.len()];
        let to = accounts[(state >> 13) as usize % accounts.len()];
        if from == to {
            continue;
        }
        let w = store.begin_write().unwrap();
        let (a, b) = (value(&w, from), value(&w, to));
        let amount = a.min(7);
        set_value(&w, from, a - amount);
        set_value(&w, to, b + amount);
        w.commit().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert!(store.stats().wal_resets.load(Ordering::Relaxed) > 0);
}

#[test]
fn freed_pages_are_reused() {
    let store = open(&MemFileSystem::new(), opts());
    let w = store.begin_write().unwrap();
    let ids: Vec<PageId> = (0..10).map(|i| new_page(&w, i)).collect();
    w.commit().unwrap();
    let w = store.begin_write().unwrap();
    for &id in &ids[..5] {
        w.free_page(id).unwrap();
    }
    assert_eq!(w.free_page_count().unwrap(), 5);
    assert!(w.free_page(ids[0]).is_err(), "double free is refused");
    w.commit().unwrap();
    let w = store.begin_write().unwrap();
    let count = w.page_count().unwrap();
    let again: Vec<PageId> = (0..5).map(|i| new_page(&w, i)).collect();
    assert_eq!(w.page_count().unwrap(), count);
    let mut sorted = again.clone();
    sorted.sort();
    assert_eq!(sorted, ids[..5].to_vec());
}

#[test]
fn in_memory_database_works() {
    let (store, report) = Store::open(":memory:", opts()).unwrap();
    assert!(report.created);
    let w = store.begin_write().unwrap();
    let p = new_page(&w, 3);
    w.commit().unwrap();
    assert_eq!(value(&store.begin_read(), p), 3);
}

#[test]
fn os_file_lock_refuses_second_handle() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.beedb");
    let (a, _) = Store::open(&path, opts()).unwrap();
    let err = Store::open(&path, opts()).err().unwrap();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    drop(a);
    Store::open(&path, opts()).unwrap();
    let _ = OpenOptions {
        create: false,
        lock_exclusive: false,
    };
}

#[test]
fn concurrent_full_commits_share_syncs() {
    // With a slow sync, committers that arrive while one sync runs are made durable by
    // the next one together: fewer syncs than commits, every commit still durable.
    let fs = FaultFileSystem::new();
    let store = open(&fs, opts());
    let w = store.begin_write().unwrap();
    let pages: Vec<PageId> = (0..4).map(|_| new_page(&w, 0)).collect();
    w.commit().unwrap();
    fs.set_config(FaultConfig {
        sync_delay: Some(Duration::from_millis(3)),
        ..Default::default()
    });
    let syncs_before = store.wal_syncs();
    let threads: Vec<_> = pages
        .iter()
        .map(|&p| {
            let store = store.clone();
            std::thread::spawn(move || {
                for v in 1..=25 {
                    let w = store.begin_write().unwrap();
                    set_value(&w, p, v);
                    w.commit().unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let syncs = store.wal_syncs() - syncs_before;
    assert!(syncs < 100 * 3 / 4, "100 commits took {syncs} syncs");
    eprintln!("100 commits, {syncs} syncs");
    // Every acknowledged commit survives a power cut.
    fs.crash();
    drop(store);
    fs.restart(7);
    let store = open(&fs, opts());
    let r = store.begin_read();
    for &p in &pages {
        assert_eq!(value(&r, p), 25);
    }
}

/// After a checkpoint empties the WAL, a WAL grown past `wal_size_limit` by a big
/// transaction shrinks back to the limit (SQLite's `journal_size_limit`); one under the
/// limit keeps its size.
#[test]
fn the_wal_shrinks_back_to_its_size_limit_after_a_checkpoint() {
    let fs = MemFileSystem::new();
    let limit = 64 << 10;
    let store = open(
        &fs,
        StoreOptions {
            wal_size_limit: limit,
            checkpoint_frames: u64::MAX,
            background_checkpoint: false,
            ..opts()
        },
    );
    let wal_len = || {
        let f = fs
            .open(Path::new("db-wal"), OpenOptions { create: false, lock_exclusive: false })
            .unwrap();
        f.len().unwrap()
    };
    let w = store.begin_write().unwrap();
    let ids: Vec<PageId> = (0..300).map(|i| new_page(&w, i)).collect();
    for &id in &ids {
        // Full pages: a WAL frame leaves out a page's free space.
        let mut g = w.write_page(id).unwrap();
        g[PAGE_HEADER_SIZE + 8..].fill(0xAB);
    }
    w.commit().unwrap();
    let grown = wal_len();
    assert!(grown > 4 * limit, "the big transaction grew the WAL to {grown} bytes");
    store.checkpoint().unwrap();
    assert_eq!(wal_len(), limit, "shrunk back to the limit");
    // A small transaction afterwards reuses the file; the data is all there.
    let w = store.begin_write().unwrap();
    set_value(&w, ids[0], 42);
    w.commit().unwrap();
    store.checkpoint().unwrap();
    assert_eq!(wal_len(), limit);
    let r = store.begin_read();
    assert_eq!(value(&r, ids[0]), 42);
    assert_eq!(value(&r, ids[299]), 299);
}

/// With the disk full, a database whose WAL holds commits cannot be opened for writing
/// (recovery must write), but a read-only open works and reads every commit from the
/// WAL in place; writes are refused clearly; once space is back a normal open recovers.
#[test]
fn read_only_open_works_while_the_disk_is_full() {
    let fs = FaultFileSystem::new();
    let o = StoreOptions {
        checkpoint_frames: u64::MAX,
        background_checkpoint: false,
        ..opts()
    };
    let ids = {
        let store = open(&fs, o.clone());
        let w = store.begin_write().unwrap();
        let ids: Vec<PageId> = (0..5).map(|i| new_page(&w, i)).collect();
        w.commit().unwrap();
        let w = store.begin_write().unwrap();
        set_value(&w, ids[4], 44);
        w.commit().unwrap();
        fs.crash(); // power cut: the commits are only in the WAL
        ids
    };
    fs.restart(7);
    fs.set_config(FaultConfig {
        disk_full: true,
        ..Default::default()
    });
    let e = Store::open_with(&fs, Path::new("db"), o.clone()).err().expect("recovery must write");
    assert!(e.to_string().contains("space"), "{e}");
    let read_only = StoreOptions { read_only: true, ..o.clone() };
    let (store, _) = Store::open_with(&fs, Path::new("db"), read_only.clone()).unwrap();
    let r = store.begin_read();
    assert_eq!(value(&r, ids[0]), 0);
    assert_eq!(value(&r, ids[4]), 44);
    drop(r);
    let e = store.begin_write().err().expect("read-only");
    assert!(e.to_string().contains("read-only"), "{e}");
    store.checkpoint().unwrap();
    drop(store);
    // Space is back: a normal open recovers and writes again.
    fs.set_config(FaultConfig::default());
    let store = open(&fs, o);
    assert_eq!(value(&store.begin_read(), ids[4]), 44);
    let w = store.begin_write().unwrap();
    set_value(&w, ids[0], 1);
    w.commit().unwrap();
    // A read-only open of a file that does not exist creates nothing.
    assert!(Store::open_with(&fs, Path::new("missing"), read_only).is_err());
    assert!(!fs.exists(Path::new("missing")));
}

/// Delta frames (`wal.rs`): a page changed by commit after commit is logged as chains of
/// deltas on full images. A checkpoint in the middle of a chain (a reader holds an older
/// snapshot, so the WAL is not reset) copies the page into the database file while the
/// chain goes on; old snapshots and recovery after a crash rebuild every version.
#[test]
fn a_checkpoint_in_the_middle_of_a_delta_chain() {
    let fs = FaultFileSystem::new();
    let o = StoreOptions {
        checkpoint_frames: u64::MAX,
        background_checkpoint: false,
        ..opts()
    };
    let p;
    {
        let store = open(&fs, o.clone());
        let w = store.begin_write().unwrap();
        p = new_page(&w, 0);
        w.commit().unwrap();
        let mut snapshots = Vec::new();
        for v in 1..=40u64 {
            let w = store.begin_write().unwrap();
            set_value(&w, p, v);
            w.commit().unwrap();
            if v % 10 == 5 {
                snapshots.push((v, store.begin_read()));
            }
            if v % 10 == 6 {
                // Backfills up to the reader's snapshot, mid-chain; no reset.
                store.checkpoint().unwrap();
            }
        }
        assert!(store.wal_delta_frames() >= 30, "{} deltas", store.wal_delta_frames());
        for (v, r) in &snapshots {
            assert_eq!(value(r, p), *v);
        }
        assert_eq!(value(&store.begin_read(), p), 40);
        store.verify_pages().unwrap();
        fs.crash();
    }
    fs.restart(3);
    let (store, report) = Store::open_with(&fs, Path::new("db"), o.clone()).unwrap();
    assert!(report.delta_frames >= 30, "{report:?}");
    assert_eq!(value(&store.begin_read(), p), 40);
    store.verify_pages().unwrap();
    // After the recovery checkpoint the WAL is a new generation: the page's first frame
    // there is a full image, then deltas again.
    for v in 41..=43u64 {
        let w = store.begin_write().unwrap();
        set_value(&w, p, v);
        w.commit().unwrap();
    }
    assert_eq!(store.wal_delta_frames(), 2);
    drop(store);
    let store = open(&fs, o);
    assert_eq!(value(&store.begin_read(), p), 43);
}

/// Two writers committing short transactions back to back under `normal`: a commit
/// frees the write lock without waking a waiter (its committer usually takes it again
/// at once), but a waiter is handed the lock within `WRITER_HANDOFF_AFTER` of asking,
/// so both make progress and none waits long; the background checkpointer, which
/// goes first, still resets the WAL. A writer that commits and then stops lets a
/// parked waiter in without any further release.
#[test]
fn writers_taking_turns_all_progress_and_the_checkpointer_gets_in() {
    let mut o = opts();
    o.synchronous = Synchronous::Normal;
    o.checkpoint_frames = 64;
    let store = open(&MemFileSystem::new(), o);
    let w = store.begin_write().unwrap();
    let pages: Vec<PageId> = (0..2).map(|_| new_page(&w, 0)).collect();
    w.commit().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = pages
        .iter()
        .map(|&p| {
            let (store, stop) = (store.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut commits, mut longest) = (0u64, Duration::ZERO);
                while !stop.load(Ordering::Relaxed) {
                    let asked = std::time::Instant::now();
                    let w = store.begin_write_timeout(Duration::from_secs(30)).unwrap();
                    longest = longest.max(asked.elapsed());
                    let v = value(&w, p);
                    set_value(&w, p, v + 1);
                    w.commit().unwrap();
                    commits += 1;
                }
                (commits, longest)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(400));
    stop.store(true, Ordering::Relaxed);
    let results: Vec<(u64, Duration)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    eprintln!("commits and longest waits: {results:?}");
    for (commits, longest) in &results {
        assert!(*commits > 0, "a writer never got the lock: {results:?}");
        // The hand-over comes after WRITER_HANDOFF_AFTER; a loaded machine may delay it.
        assert!(*longest < Duration::from_secs(5), "a writer waited {longest:?}");
    }
    let r = store.begin_read();
    for (&p, (commits, _)) in pages.iter().zip(&results) {
        assert_eq!(value(&r, p), *commits);
    }
    drop(r);
    assert!(store.stats().wal_resets.load(Ordering::Relaxed) > 0);

    // A parked waiter gets in after the holder's commit even though nobody releases
    // the lock again.
    let w = store.begin_write().unwrap();
    let s2 = store.clone();
    let t = std::thread::spawn(move || s2.begin_write_timeout(Duration::from_secs(10)).map(|_| ()));
    std::thread::sleep(Duration::from_millis(20));
    set_value(&w, pages[0], 0);
    w.commit().unwrap();
    t.join().unwrap().unwrap();
}
